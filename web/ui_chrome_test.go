package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/web"
)

// Pages seen signed out say "Sign in", not "read-only link" (the share
// pages' words), and carry no empty main navigation; share pages keep
// theirs.
func TestUIChromeSignedOut(t *testing.T) {
	e := newUIEnv(t)
	anon := e.browser()
	missing := anon.get("/nope")
	if missing.status != http.StatusNotFound {
		t.Fatalf("/nope: %d", missing.status)
	}
	if missing.testid("read-only").Length() != 0 || missing.testid("sign-in").Length() != 1 || missing.doc.Find(`nav[aria-label="Main"]`).Length() != 0 {
		t.Errorf("signed-out 404 header: %s", headerHTML(missing))
	}
	if login := anon.get("/login"); login.testid("read-only").Length() != 0 || login.doc.Find(`nav[aria-label="Main"]`).Length() != 0 {
		t.Errorf("login header: %s", headerHTML(login))
	}
	w := e.browser()
	w.login(e.write)
	made := w.share(e.incidentPath())
	link, _ := made.testid("share-url").Attr("value")
	u, _ := url.Parse(link)
	if shared := anon.get(u.Path); shared.testid("read-only").Length() != 1 || shared.testid("sign-in").Length() != 0 {
		t.Errorf("share page header: %s", headerHTML(shared))
	}
}

// Sign out with a session that ended (a page left open overnight) clears
// the dead cookie and goes to the sign-in page: it answered "401 sign in
// first" and kept the cookie.
func TestUISignOutAfterTheSessionEnded(t *testing.T) {
	e := newUIEnv(t)
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/logout", strings.NewReader("csrf=whatever"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "wl_session", Value: "ended-session-secret"})
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cleared := false
	for _, ck := range res.Cookies() {
		cleared = cleared || (ck.Name == "wl_session" && ck.MaxAge < 0)
	}
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" || !cleared {
		t.Errorf("POST /logout with an ended session: %d → %q, cookie cleared %v", res.StatusCode, res.Header.Get("Location"), cleared)
	}
}

// A user the auth proxy signs in is offered no Sign out: it signed no
// one out (the next page saw the proxy's header and signed them back in).
func TestUIProxyUserHasNoSignOut(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.AuthProxyHeader = "X-Forwarded-User" })
	b := e.browser()
	home := b.do("GET", "/", nil, map[string]string{"X-Forwarded-User": "alice@example.com"})
	if home.status != http.StatusOK || home.testid("user").Text() != "alice@example.com" {
		t.Fatalf("proxy user's home: %d %q", home.status, home.testid("user").Text())
	}
	if home.doc.Find(`form[action="/logout"]`).Length() != 0 {
		t.Errorf("a proxy user is offered Sign out: %s", headerHTML(home))
	}
}

func headerHTML(p page) string {
	h, _ := p.doc.Find("header").Html()
	return h
}

// The home page has a level-one heading (it had four h2s and none).
func TestUIHomeHasAHeading(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	if n := b.get("/").doc.Find("main h1").Length(); n != 1 {
		t.Errorf("home page: %d h1", n)
	}
}
