package web_test

import (
	"net/http"
	"net/url"
	"testing"
)

// An open redirect after sign-in: the form's next and, for a user already
// signed in, GET /login?next= both answer a Location on this site only.
func TestLoginRedirectStaysOnSite(t *testing.T) {
	e := newAPIEnv(t)
	bypasses := []string{"/\t/evil.example/x", "/\\evil.example", "//evil.example", "/%2F/evil.example",
		"https:evil.example", "/\uff0fevil.example", "/%5Cevil.example"}
	for _, next := range bypasses {
		b := e.browser()
		p := b.get("/login")
		csrf, _ := p.doc.Find(`input[name=csrf]`).Attr("value")
		r := b.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {e.read}, "next": {next}}, nil)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
			t.Errorf("POST /login next=%q: %d Location %q, want 303 /", next, r.status, r.header.Get("Location"))
		}
		// Signed in now: GET /login redirects at once.
		r = b.get("/login?next=" + url.QueryEscape(next))
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
			t.Errorf("GET /login?next=%q: %d Location %q, want 303 /", next, r.status, r.header.Get("Location"))
		}
	}
	b := e.browser()
	b.login(e.read)
	if r := b.get("/login?next=" + url.QueryEscape("/incidents/1?tenant=a")); r.header.Get("Location") != "/incidents/1?tenant=a" {
		t.Errorf("a path on this site was not kept: %q", r.header.Get("Location"))
	}
}
