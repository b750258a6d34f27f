package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/correlate"
)

// The export opens from a share link too: without a session, linking back
// to the share link (never the signed-in permalink) and its chart, and it
// dies with the link.
func TestUIShareExport(t *testing.T) {
	e := newUIEnv(t)
	w := e.browser()
	w.login(e.write)
	made := w.share(e.incidentPath())
	link, _ := made.testid("share-url").Attr("value")
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/s/") {
		t.Fatalf("share URL %q (%d)", link, made.status)
	}
	// Signed in, the export links the permalink and its chart (the share
	// link's token cannot be read back). The chart needs a session: it is
	// linked, not embedded — pasted into a ticket, an embedded one showed
	// as a broken image (the ticket's image fetcher got a redirect to the
	// sign-in page).
	if r := w.get(e.incidentPath() + "/export.md"); !strings.Contains(r.body, "<http://waterline.test"+e.incidentPath()+">") ||
		!strings.Contains(r.body, "<http://waterline.test"+e.incidentPath()+"/og.png> (sign-in required)") || strings.Contains(r.body, "![") || strings.Contains(r.body, "/s/") {
		t.Errorf("signed-in export:\n%s", r.body)
	}
	anon := e.browser()
	page := anon.get(u.Path)
	href, _ := page.testid("share-export-md").Attr("href")
	if href != u.Path+"/export.md" {
		t.Fatalf("share page export link %q", href)
	}
	r := anon.get(href)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") {
		t.Fatalf("share export: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{"# Incident #", "## Likely causes", "<" + link + ">", "](" + link + "/og.png)", "Exported from Waterline: <" + link + ">"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("share export lacks %q:\n%s", want, r.body)
		}
	}
	if strings.Contains(r.body, "/incidents/") {
		t.Errorf("share export links the signed-in page:\n%s", r.body)
	}
	if cc := r.header.Get("Cache-Control"); cc != "private, no-cache" {
		t.Errorf("share export Cache-Control %q", cc)
	}
	w.post(e.incidentPath()+"/share/revoke", nil)
	if r := anon.get(href); r.status != http.StatusNotFound {
		t.Errorf("export of a revoked link: %d", r.status)
	}
}

// The API's incident summary (what GET /api/v1/incidents and webhooks
// carry) gives the analysis' headline, the same line the page's title
// shows.
func TestAPIIncidentHeadlineIsThePageTitle(t *testing.T) {
	e := newUIEnv(t)
	if inc := e.incident(e.id); inc.Headline != nil {
		t.Fatalf("headline %+v from an analysis that has none", inc.Headline)
	}
	a := e.analysis()
	a.Headline = correlate.Headline{Model: "chat", Title: "P99 latency up ×9.0 on chat", Summary: "chat: P99 100 ms → 900 ms."}
	e.storeAnalysisOf(t, a)
	inc := e.incident(e.id)
	if inc.Headline == nil || *inc.Headline != a.Headline {
		t.Fatalf("API headline %+v, want %+v", inc.Headline, a.Headline)
	}
	w := e.browser()
	w.login(e.read)
	if title := w.get(e.incidentPath()).testid("title").Text(); title != inc.Headline.Title {
		t.Errorf("page title %q, API headline %q", title, inc.Headline.Title)
	}
}
