// Package ui is Waterline's htmx UI: page handlers (methods of Pages named
// <Verb><Page>), browser sessions with CSRF tokens, share links, and the
// caches that keep a busy incident page cheap. Handlers load data (the
// store, or an incident's frozen snapshot), build view structs with
// package views, and render its templ components. web/routes.go mounts
// them.
package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// Config holds the pages' settings.
type Config struct {
	PublicURL       string // base URL for permalinks and share links, without a trailing slash
	AuthProxyHeader string // trusted user header from an auth proxy; empty = off
	// AuthProxyScope is what a proxy user may do (WATERLINE_AUTH_PROXY_SCOPE);
	// empty = read.
	AuthProxyScope store.TokenScope
	// DetectorOn and DetectorOpens: the background spike detector runs,
	// and opens incidents (web.Config's).
	DetectorOn, DetectorOpens bool
}

// Deps are the pages' collaborators.
type Deps struct {
	Store     *store.Store
	Incidents *incident.Service
	Now       func() time.Time
}

// Pages serves the UI.
type Pages struct {
	cfg       Config
	store     *store.Store
	incidents *incident.Service
	now       func() time.Time

	sessions sessionCache  // browser sessions (auth.go)
	views    viewCache     // decoded analyses and snapshots (data.go)
	viewData viewDataCache // timeline and sample pages, briefly (cache.go)
	share    pageCache     // rendered share pages, compressed (pagecache.go)
	pages    pageCache     // rendered signed-in incident pages, per session
}

// New returns the pages.
func New(cfg Config, deps Deps) *Pages {
	return &Pages{cfg: cfg, store: deps.Store, incidents: deps.Incidents, now: deps.Now}
}

// htmx request headers (https://htmx.org/reference/#request_headers).
const (
	hxRequest        = "HX-Request"
	hxBoosted        = "HX-Boosted"
	hxHistoryRestore = "HX-History-Restore-Request"
	hxTarget         = "HX-Target"
)

// render writes a component through a buffer, so that a render error still
// becomes a clean error response instead of half a page. Pages differ by
// HX-Request (full page or fragment), which caches must know.
func render(c echo.Context, status int, cmp templ.Component) error {
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	// Rendering is CPU work on data already loaded; it must also work for
	// an error page written after the request's deadline context ended.
	if err := cmp.Render(context.WithoutCancel(c.Request().Context()), buf); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Add("Vary", "HX-Request, Sec-Fetch-Mode")
	h.Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// lazyNavigation reports whether r is a browser's navigation to a full
// page: it gets the page above the fold, and htmx loads the rest when it
// is scrolled to. Crawlers and curl send no Sec-Fetch-Mode; a browser with
// scripts off does, and follows the lazy region's link, which asks for
// the whole page (wholeParam).
func lazyNavigation(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" && fragmentTarget(r) == "" && r.URL.Query().Get(wholeParam) == ""
}

// wholeParam asks a navigation for the whole page, below the fold too.
const wholeParam = "whole"

// wholePage is the lazy region's link for a browser without scripts: the
// whole page, scrolled to the region.
func wholePage(u string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + wholeParam + "=1#timeline"
}

// pageVariant names which answer a request gets, for the page caches' keys:
// the fragment it swaps (a heatmap selection with its box), a browser
// navigation's light page, or the whole page.
func pageVariant(r *http.Request) string {
	switch t := fragmentTarget(r); {
	case t == "bubbleup":
		return t + "|" + r.URL.Query().Get("hsel")
	case lazyNavigation(r):
		return "navigate"
	default:
		return t
	}
}

// fragmentTarget returns the id of the element an htmx request will swap
// ("" for a full page): boosted links and history restores need the page.
func fragmentTarget(r *http.Request) string {
	if r.Header.Get(hxRequest) != "true" || r.Header.Get(hxBoosted) == "true" || r.Header.Get(hxHistoryRestore) == "true" {
		return ""
	}
	return r.Header.Get(hxTarget)
}

// page renders body inside the layout.
func (p *Pages) page(c echo.Context, status int, meta views.Page, body templ.Component) error {
	if u, ok := userOf(c); ok {
		meta.User, meta.CSRF, meta.Proxied = u.Name, u.CSRF, u.Proxied
	}
	return render(c, status, views.Layout(meta, body))
}

// RenderError shows an error to a browser: a fragment for htmx, a page
// otherwise (with the sign-in state, when there is one). web's error
// handler calls it for requests that want HTML.
func (p *Pages) RenderError(c echo.Context, status int, msg string) error {
	if f, ok := lazyRetry(c.Request(), status, msg); ok {
		// The lazy region's own load failed (a database blip, the heavy
		// read limiter): the region says so where the reader is looking,
		// and tries again by itself (views.LazyRetry).
		c.Response().Header().Set("HX-Push-Url", "false")
		return render(c, status, views.FilteredRegion(f))
	}
	if fragmentTarget(c.Request()) != "" {
		// Into the layout's error region, whatever the request targeted
		// and selected (the fragment holds none of its regions), and its
		// URL not pushed: the page stays as it was, with the reason.
		h := c.Response().Header()
		h.Set("HX-Retarget", "#htmx-error")
		h.Set("HX-Reswap", "innerHTML")
		h.Set("HX-Reselect", "unset")
		h.Set("HX-Push-Url", "false")
		return render(c, status, views.ErrorFragment(status, msg))
	}
	if tok := c.Param("token"); tok != "" && strings.HasPrefix(c.Path(), "/s/:token") {
		// Reached through a share link by a reader without an account:
		// back to the shared incident (when the link works), never to
		// the incidents list or a sign-in.
		back := ""
		if status != http.StatusNotFound {
			back = "/s/" + url.PathEscape(tok)
		}
		return p.page(c, status, views.Page{Title: http.StatusText(status), Shared: true},
			views.ErrorPage(status, http.StatusText(status), msg, back, "Back to the shared incident"))
	}
	return p.page(c, status, views.Page{Title: http.StatusText(status)}, views.ErrorPage(status, http.StatusText(status), msg, "/", "Back to incidents"))
}

// lazyRetry is the lazy region again, with the reason and a retry, when r
// is that region's load (it sends views.LazyHeader) and failed for a
// reason that may pass (5xx, 429); ok is false otherwise.
func lazyRetry(r *http.Request, status int, msg string) (views.Filtered, bool) {
	failed, err := strconv.Atoi(r.Header.Get(views.LazyHeader))
	if err != nil || failed < 0 || fragmentTarget(r) != "filtered" || (status < 500 && status != http.StatusTooManyRequests) ||
		!strings.HasPrefix(r.URL.Path, "/") || strings.HasPrefix(r.URL.Path, "//") {
		return views.Filtered{}, false
	}
	u := r.URL.Path
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	f := views.Filtered{Lazy: u, Whole: wholePage(u), Retry: views.NewLazyRetry(status, msg, failed+1)}
	if st, err := views.ParseState(r.URL.Path, r.URL.Query()); err == nil {
		f.Window = views.WindowOf(st)
	}
	return f, true
}

// incidentPath is an incident's page on this site.
func incidentPath(id int64) string { return incident.Permalink("", id) }
