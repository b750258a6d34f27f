package web

import (
	"context"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/web/ui"
)

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
	h.Add("Vary", "HX-Request")
	h.Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
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
func (s *Server) page(c echo.Context, status int, p ui.Page, body templ.Component) error {
	if u, ok := uiUserOf(c); ok {
		p.User, p.CSRF = u.Name, u.CSRF
	}
	return render(c, status, ui.Layout(p, body))
}

// renderError shows an error to a browser: a fragment for htmx, a page
// otherwise (with the sign-in state, when there is one).
func (s *Server) renderError(c echo.Context, status int, msg string) error {
	if fragmentTarget(c.Request()) != "" {
		return render(c, status, ui.ErrorFragment(status, msg))
	}
	return s.page(c, status, ui.Page{Title: http.StatusText(status)}, ui.ErrorPage(status, http.StatusText(status), msg))
}
