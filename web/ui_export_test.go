package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The export opens from a share link too: without a session, linking back
// to the share link (never the signed-in permalink) and its chart, and it
// dies with the link.
func TestUIShareExport(t *testing.T) {
	e := newUIEnv(t)
	w := e.browser()
	w.login(e.write)
	if r := w.post(e.incidentPath()+"/share", nil); r.status != http.StatusSeeOther {
		t.Fatalf("share: %d", r.status)
	}
	link, _ := w.get(e.incidentPath()).testid("share-url").Attr("value")
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/s/") {
		t.Fatalf("share URL %q", link)
	}
	// Signed in, the export now carries the share link and its chart.
	if r := w.get(e.incidentPath() + "/export.md"); !strings.Contains(r.body, "<"+link+">") || !strings.Contains(r.body, "]("+link+"/og.png)") {
		t.Errorf("signed-in export lacks the share link or its chart:\n%s", r.body)
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
