package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
)

func TestUISignInRequired(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	for _, path := range []string{"/", "/explore", e.incidentPath(), e.incidentPath() + "/export.md"} {
		r := b.get(path)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next="+url.QueryEscape(path) {
			t.Errorf("GET %s without a session: %d Location %q", path, r.status, r.header.Get("Location"))
		}
	}
	// htmx cannot follow a redirect into a fragment: it is told to navigate.
	r := b.fragment(e.incidentPath(), "filtered")
	if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("HX-Redirect"), "/login?next=") {
		t.Errorf("htmx without a session: %d HX-Redirect %q", r.status, r.header.Get("HX-Redirect"))
	}
	// After signing in, the browser comes back to the page it showed, not
	// to the polled fragment's own URL (a blank banner).
	page := e.incidentPath() + "?from=" + url.QueryEscape(e.from.Format(time.RFC3339))
	r = b.do("GET", e.incidentPath()+"/status", nil, map[string]string{"HX-Request": "true", "HX-Target": "analysis-banner",
		"HX-Current-URL": e.srv.URL + page})
	if want := "/login?next=" + url.QueryEscape(page); r.header.Get("HX-Redirect") != want {
		t.Errorf("a poll without a session: HX-Redirect %q, want %q", r.header.Get("HX-Redirect"), want)
	}
	// An API token is not a browser session, and the API keeps bearer auth.
	if r := b.do("GET", e.incidentPath(), nil, map[string]string{"Authorization": "Bearer " + e.read}); r.status != http.StatusSeeOther {
		t.Errorf("UI page with a bearer token: %d", r.status)
	}
	if r := b.get("/api/v1/incidents"); r.status != http.StatusUnauthorized {
		t.Errorf("API with a browser (no bearer): %d", r.status)
	}
}

func TestUILogin(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	p := b.get("/login?next=" + url.QueryEscape(e.incidentPath()))
	p.mustHave(t, "login page", "login")
	csrf, _ := p.doc.Find(`input[name=csrf]`).Attr("value")
	// Wrong token: 401 and the form again.
	r := b.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {"wl_nope"}, "next": {"/"}}, nil)
	if r.status != http.StatusUnauthorized || r.testid("login-error").Length() == 0 {
		t.Fatalf("bad token: %d", r.status)
	}
	// Missing CSRF: rejected even with a good token.
	p = b.get("/login")
	r = b.do("POST", "/login", url.Values{"csrf": {"forged"}, "token": {e.read}}, nil)
	if r.status != http.StatusForbidden {
		t.Fatalf("login without the form's CSRF token: %d", r.status)
	}
	p = b.get("/login")
	csrf, _ = p.doc.Find(`input[name=csrf]`).Attr("value")
	r = b.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {e.read}, "next": {"//evil.example/x"}}, nil)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Fatalf("login with an off-site next: %d %q", r.status, r.header.Get("Location"))
	}
	ck := r.header.Get("Set-Cookie")
	for _, want := range []string{"wl_session=", "HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"} {
		if !strings.Contains(ck, want) {
			t.Errorf("session cookie %q lacks %s", ck, want)
		}
	}
	// The lifetime is relative: a browser whose clock disagrees with the
	// server's must neither drop the session at once nor keep it for ever.
	if strings.Contains(ck, "Expires=") {
		t.Errorf("session cookie %q carries an absolute Expires date", ck)
	}
	home := b.get("/")
	home.mustHave(t, "home", "user", "open-incidents", "pull-health", "recent-spikes")
	// Sign out ends the session.
	if r := b.post("/logout", nil); r.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.status)
	}
	if r := b.get("/"); r.status != http.StatusSeeOther {
		t.Fatalf("after logout: %d", r.status)
	}
}

func TestUIRevokedTokenEndsSession(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	secret, tok, err := e.st.CreateToken(context.Background(), "short-lived", "read")
	if err != nil {
		t.Fatal(err)
	}
	b.login(secret)
	if _, err := e.pool.Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	// The store no longer accepts the session (the server's cache forgets
	// it within 30 s).
	ctx := context.Background()
	ck := ""
	u, _ := url.Parse(e.srv.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "wl_session" {
			ck = c.Value
		}
	}
	if _, err := e.st.LookupSession(ctx, ck, testNow); err == nil {
		t.Fatal("session of a revoked token still valid")
	}
}

func TestUIPagesAndFragments(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	inc := e.incidentPath()

	p := b.get(inc)
	if p.status != 200 {
		t.Fatalf("incident page: %d %.500s", p.status, p.body)
	}
	p.mustHave(t, "incident page", "incident-header", "checklist", "causes", "cause", "timeline", "lane-latency", "lane-stages",
		"event-lane", "onset", "concentration", "conc-table", "sample-table", "sample-row", "stages", "aligned", "export-md")
	if got := p.testid("cause").First().AttrOr("data-category", ""); got != "capacity" {
		t.Errorf("first cause %q, want capacity", got)
	}
	if got := p.testid("p99").Text(); !strings.Contains(got, "100 ms") || !strings.Contains(got, "900 ms") {
		t.Errorf("P99 header %q", got)
	}
	if n := p.testid("sample-row").Length(); n != 25 {
		t.Errorf("%d sample rows on page 1, want 25", n)
	}
	// The default page spreads the slow requests over the window and the
	// replicas (store.TestSamplesPageSpread holds the order); a link shows
	// the slowest only, and back. Both pages read by total, descending.
	href, _ := p.testid("sample-pick-link").Attr("href")
	if !strings.Contains(href, "pick=slowest") || !strings.Contains(p.testid("sample-pick").Text(), "each replica") {
		t.Errorf("sample pick %q, link %q", p.testid("sample-pick").Text(), href)
	}
	slowest := b.fragment(href, "sample-table")
	back, _ := slowest.testid("sample-pick-link").Attr("href")
	if slowest.testid("sample-row").Length() != 25 || strings.Contains(back, "pick=") {
		t.Errorf("slowest only: %d rows, link back %q", slowest.testid("sample-row").Length(), back)
	}
	for _, pg := range []page{p, slowest} {
		prev := math.Inf(1)
		pg.doc.Find(`[data-testid=sample-row] td.num:nth-child(3)`).Each(func(i int, c *goquery.Selection) {
			v, err := strconv.ParseFloat(strings.TrimSuffix(strings.ReplaceAll(c.Text(), ",", ""), " ms"), 64)
			if err != nil || v > prev {
				t.Errorf("row %d: total %q after %.0f ms, want by total descending", i, c.Text(), prev)
			}
			prev = v
		})
	}
	if p.doc.Find("svg path").Length() == 0 {
		t.Error("no SVG paths in the lanes")
	}
	if v := strings.Join(p.header.Values("Vary"), ", "); !strings.Contains(v, "HX-Request") {
		t.Errorf("Vary %q", v)
	}
	// Read scope: no share/freeze/resolve buttons.
	if p.testid("share").Length()+p.testid("freeze").Length()+p.testid("resolve").Length() != 0 {
		t.Error("a read-only session sees write buttons")
	}

	frags := []struct{ path, target, want string }{
		{inc + "?tenant=" + tenantA, "filtered", "filtered"},
		{inc + "?sort=queue&page=2", "sample-table", "sample-table"},
		{inc + "/samples/q-000400-0?t=" + sampleMs(t, e, "q-000400-0"), "sample-detail", "sample-detail-body"},
		{"/explore?from=" + e.from.Format("2006-01-02T15:04:05Z") + "&to=" + e.to.Format("2006-01-02T15:04:05Z"), "filtered", "timeline"},
	}
	for _, f := range frags {
		r := b.fragment(f.path, f.target)
		if r.status != 200 {
			t.Errorf("fragment %s: %d %.300s", f.path, r.status, r.body)
			continue
		}
		if strings.Contains(r.body, "<html") || strings.Contains(r.body, "<head") {
			t.Errorf("fragment %s is a full page", f.path)
		}
		r.mustHave(t, "fragment "+f.path, f.want)
	}
	// The pending-analysis poll answers HX-Refresh once the analysis is ready.
	if r := b.fragment(inc+"/status", "analysis-banner"); r.status != 200 || r.header.Get("HX-Refresh") != "true" {
		t.Errorf("status poll with a ready analysis: %d HX-Refresh %q", r.status, r.header.Get("HX-Refresh"))
	}
	for _, path := range []string{"/", "/explore", "/explore?model=chat&from=" + e.from.Format("2006-01-02T15:04:05Z")} {
		r := b.get(path)
		if r.status != 200 {
			t.Errorf("GET %s: %d", path, r.status)
		}
		r.mustHave(t, path, "user")
	}
	// og.png for signed-in users too.
	r := b.get(inc + "/og.png")
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Errorf("og.png: %d %s", r.status, r.header.Get("Content-Type"))
	}
}

func sampleMs(t *testing.T, e *uiEnv, rid string) string {
	t.Helper()
	var ms int64
	if err := e.pool.QueryRow(context.Background(), `SELECT (extract(epoch FROM time) * 1000)::bigint FROM samples WHERE request_id = $1`, rid).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(ms, 10)
}

func TestUIFiltersReachSamplesAndState(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	p := b.get(e.incidentPath())
	// Concentration rows link to the filtered view; a non-filterable
	// dimension (replica_age) has no link.
	links := p.testid("conc-link")
	if links.Length() != 2 {
		t.Fatalf("%d concentration links, want 2 (replica_age is not filterable)", links.Length())
	}
	href, _ := links.First().Attr("href")
	if href != e.incidentPath()+"?tenant="+tenantA {
		t.Fatalf("first row links to %q", href)
	}
	f := b.get(href)
	f.testid("sample-tenant").Each(func(_ int, s *goquery.Selection) {
		if s.Text() != tenantA {
			t.Errorf("filtered to %s, a sample row has tenant %q", tenantA, s.Text())
		}
	})
	if f.testid("sample-row").Length() == 0 {
		t.Fatal("no sample rows after filtering")
	}
	if f.doc.Find(`tr[aria-selected] [data-testid=conc-link]`).Text() != "tenant="+tenantA {
		t.Error("the clicked row is not marked selected")
	}
	if f.testid("filter-chip").Text() != "tenant="+tenantA {
		t.Errorf("filter chip %q", f.testid("filter-chip").Text())
	}
	// Baseline tab: none of the rows is slow (threshold 200 ms).
	base := b.get(e.incidentPath() + "?tab=baseline")
	if base.testid("sample-row").Length() == 0 {
		t.Fatal("baseline tab is empty")
	}
	// A filter that matches nothing says so, with a way back.
	none := b.get(e.incidentPath() + "?replica=nope")
	if !strings.Contains(none.testid("samples-empty").Text(), "No samples match") {
		t.Errorf("empty filter result: %q", none.testid("samples-empty").Text())
	}
	// Bad parameters are a 400 page naming the parameter.
	bad := b.get(e.incidentPath() + "?from=yesterday")
	if bad.doc == nil {
		t.Fatalf("bad from: %d %s %q", bad.status, bad.header.Get("Content-Type"), bad.body)
	}
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.testid("error").Text(), "from") {
		t.Errorf("bad from: %d %q", bad.status, bad.testid("error").Text())
	}
	// A window past 31 days is refused, not read.
	wide := b.get(e.incidentPath() + "?from=2000-01-01T00:00:00Z")
	if wide.status != http.StatusBadRequest || !strings.Contains(wide.testid("error").Text(), "longer than 31 days") {
		t.Errorf("a 26-year window: %d %q, want 400 naming the limit", wide.status, wide.testid("error").Text())
	}
	nf := b.get("/incidents/999999")
	if nf.status != http.StatusNotFound {
		t.Errorf("unknown incident: %d", nf.status)
	}
	nf.mustHave(t, "404 page", "error", "user")
	if fr := b.fragment("/incidents/999999", "filtered"); fr.status != 404 || strings.Contains(fr.body, "<html") {
		t.Errorf("404 fragment: %d %.200s", fr.status, fr.body)
	}
}

func TestUICSRFAndScopes(t *testing.T) {
	e := newUIEnv(t)
	reader := e.browser()
	reader.login(e.read)
	writer := e.browser()
	writer.login(e.write)
	share := e.incidentPath() + "/share"
	if r := reader.post(share, nil); r.status != http.StatusForbidden {
		t.Errorf("share with read scope: %d", r.status)
	}
	if r := writer.post(share, url.Values{"csrf": {""}}); r.status != http.StatusForbidden {
		t.Errorf("share without CSRF token: %d", r.status)
	}
	if r := writer.post(share, url.Values{"csrf": {"not-the-token"}}); r.status != http.StatusForbidden {
		t.Errorf("share with a wrong CSRF token: %d", r.status)
	}
	// The header htmx sends counts as well as the form field.
	r := writer.do("POST", share, url.Values{}, map[string]string{"X-CSRF-Token": writer.csrf})
	if r.status != http.StatusSeeOther {
		t.Fatalf("share with the CSRF header: %d %s", r.status, r.body)
	}
	if r := writer.post("/logout", url.Values{"csrf": {"x"}}); r.status != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d", r.status)
	}
	p := writer.get(e.incidentPath())
	p.mustHave(t, "writer's page", "sharebox", "freeze", "resolve", "revoke")
}

func TestUIAuthProxy(t *testing.T) {
	e := newUIEnv(t, func(c *web.Config) { c.AuthProxyHeader = "X-Forwarded-User"; c.AuthProxyScope = "write" })
	b := e.browser()
	p := b.do("GET", e.incidentPath(), nil, map[string]string{"X-Forwarded-User": "alice@example.com"})
	if p.status != 200 || p.testid("user").Text() != "alice@example.com" {
		t.Fatalf("proxy user: %d %q", p.status, p.testid("user").Text())
	}
	// The session is bound to the proxy's user: without the header it is
	// worth nothing, and another user behind the same cookie gets their own.
	if r := b.get(e.incidentPath()); r.status != http.StatusSeeOther {
		t.Errorf("proxy session without the header: %d", r.status)
	}
	r := b.do("POST", e.incidentPath()+"/freeze", url.Values{"csrf": {b.csrf}}, map[string]string{"X-Forwarded-User": "alice@example.com"})
	if r.status != http.StatusSeeOther {
		t.Errorf("proxy user freeze with CSRF: %d %s", r.status, r.body)
	}
	r = b.do("POST", e.incidentPath()+"/freeze", url.Values{}, map[string]string{"X-Forwarded-User": "alice@example.com"})
	if r.status != http.StatusForbidden {
		t.Errorf("proxy user freeze without CSRF: %d", r.status)
	}
	// Without the setting the header is ignored.
	plain := newUIEnv(t)
	if r := plain.browser().do("GET", plain.incidentPath(), nil, map[string]string{"X-Forwarded-User": "mallory"}); r.status != http.StatusSeeOther {
		t.Errorf("untrusted proxy header accepted: %d", r.status)
	}
}

func TestUIShareLink(t *testing.T) {
	e := newUIEnv(t)
	w := e.browser()
	w.login(e.write)
	// The link is on the page the making redirects to, and only there:
	// only its hash is kept, and it is never in a URL.
	made := w.share(e.incidentPath())
	link, _ := made.testid("share-url").Attr("value")
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/s/") || len(u.Path) < 3+32 {
		t.Fatalf("share URL %q", link)
	}
	if made.header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page showing the link: Cache-Control %q", made.header.Get("Cache-Control"))
	}
	// Reloading is a GET: it neither makes another link nor shows this one.
	later := w.get(e.incidentPath())
	if later.testid("share-url").Length() != 0 || strings.Contains(later.body, u.Path) {
		t.Error("the incident page shows the link again")
	}
	if r := e.browser().get(u.Path); r.status != http.StatusOK {
		t.Errorf("the link after a reload: %d", r.status)
	}
	later.mustHave(t, "shared incident page", "share-since", "share-new", "revoke")
	// Making a new link replaces the old one.
	again := w.share(e.incidentPath())
	second, _ := again.testid("share-url").Attr("value")
	if second == "" || second == link {
		t.Fatalf("second share: %d %q", again.status, second)
	}
	if r := e.browser().get(u.Path); r.status != http.StatusNotFound {
		t.Errorf("the replaced link still opens the page: %d", r.status)
	}
	u, _ = url.Parse(second)

	anon := e.browser() // no cookie, like a chat crawler
	// Link unfurlers probe with HEAD before they GET (a 405 there and
	// some give up): the page and its card answer as GET would, bodiless.
	for _, path := range []string{u.Path, u.Path + "/og.png"} {
		if h := anon.do("HEAD", path, nil, nil); h.status != 200 || h.body != "" || h.header.Get("Content-Type") == "" {
			t.Errorf("HEAD %s: %d, %q, %d bytes", path, h.status, h.header.Get("Content-Type"), len(h.body))
		}
	}
	p := anon.get(u.Path)
	if p.status != 200 {
		t.Fatalf("share link without login: %d", p.status)
	}
	p.mustHave(t, "share page", "causes", "timeline", "sample-table")
	if p.doc.Find("form[method=post]").Length() != 0 || p.testid("export-md").Length() != 0 {
		t.Error("share page offers actions")
	}
	if p.header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Referrer-Policy %q", p.header.Get("Referrer-Policy"))
	}
	// Meta tags: early in <head> (before <title>, in the first 32 KB), and
	// never a tenant name, although the title and the analysis have one.
	head := p.body[:strings.Index(p.body, "</head>")]
	og := strings.Index(head, `property="og:title"`)
	if og < 0 || og > strings.Index(head, "<title>") || og > 32<<10 {
		t.Fatalf("og:title at %d, <title> at %d", og, strings.Index(head, "<title>"))
	}
	tags := map[string]string{}
	p.doc.Find(`head meta[property^="og:"], head meta[name^="twitter:"]`).Each(func(_ int, s *goquery.Selection) {
		k := s.AttrOr("property", s.AttrOr("name", ""))
		tags[k] = s.AttrOr("content", "")
	})
	for _, k := range []string{"og:title", "og:description", "og:image", "og:url", "twitter:card", "twitter:label1", "twitter:data1"} {
		if tags[k] == "" {
			t.Errorf("no %s", k)
		}
	}
	for k, v := range tags {
		if strings.Contains(strings.ToLower(v), tenantA) || strings.Contains(strings.ToLower(v), tenantB) {
			t.Errorf("%s names a tenant: %q", k, v)
		}
	}
	if !strings.Contains(tags["og:description"], "Capacity") || !strings.Contains(tags["og:description"], "100 ms → 900 ms") {
		t.Errorf("og:description %q", tags["og:description"])
	}
	if !strings.Contains(tags["og:title"], "[tenant]") {
		t.Errorf("og:title %q: the tenant in the title should be scrubbed", tags["og:title"])
	}
	// The preview image: a PNG of 1200×630, public.
	img := anon.get(strings.TrimPrefix(tags["og:image"], "http://waterline.test"))
	if img.status != 200 || img.header.Get("Content-Type") != "image/png" {
		t.Fatalf("og:image %s: %d %s", tags["og:image"], img.status, img.header.Get("Content-Type"))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader([]byte(img.body)))
	if err != nil || cfg.Width != 1200 || cfg.Height != 630 {
		t.Fatalf("og.png: %v %dx%d", err, cfg.Width, cfg.Height)
	}
	// Fragments work under the share link, read-only pages of samples too.
	if r := anon.fragment(u.Path+"?sort=time", "sample-table"); r.status != 200 || r.testid("sample-row").Length() == 0 {
		t.Errorf("share sample table fragment: %d", r.status)
	}
	share := anon.get(u.Path)
	detail, _ := share.testid("sample-link").First().Attr("href")
	if !strings.HasPrefix(detail, u.Path+"/samples/") {
		t.Errorf("share page sample link %q", detail)
	}
	if r := anon.fragment(detail, "sample-detail"); r.status != 200 || r.testid("sample-detail-body").Length() == 0 {
		t.Errorf("share sample detail: %d", r.status)
	}
	// Opened as a page of its own (a new tab): a level-one heading and
	// the way back to the shared incident (it had an h3 and no link).
	if r := anon.get(detail); r.status != 200 || r.doc.Find("main h1").Length() != 1 {
		t.Errorf("share sample page: %d, %d h1", r.status, r.doc.Find("main h1").Length())
	} else if back, _ := r.testid("back-to-incident").Attr("href"); back != u.Path {
		t.Errorf("share sample page links back to %q, want %q", back, u.Path)
	}
	// Guessing fails; revoking kills the link.
	if r := anon.get("/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); r.status != http.StatusNotFound {
		t.Errorf("guessed token: %d", r.status)
	}
	w.post(e.incidentPath()+"/share/revoke", nil)
	if r := anon.get(u.Path); r.status != http.StatusNotFound {
		t.Errorf("revoked link: %d", r.status)
	}
	if r := anon.get(u.Path + "/og.png"); r.status != http.StatusNotFound {
		t.Errorf("revoked og.png: %d", r.status)
	}
}

func TestUIMarkdownExport(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	r := b.get(e.incidentPath() + "/export.md")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") {
		t.Fatalf("export: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{
		"# Incident #", "## Likely causes", "### 1. Capacity / traffic peak — score 0.82",
		"- ✔ Queueing explains 91% of the tail's growth.",
		"- ✘ No deploy of chat in the hour before.", "- [ ] Scale chat out",
		"## Timeline", "| deploy |", "| onset | latency |", "## Where the time went", "| queue | 5.0 ms | 420 ms | +415 ms |",
		"## Where slow requests concentrate", "| tenant=" + tenantA + " | 100% | 30% |", "## Checklist", "1. **Scope:**",
		"Permalink (signed in):** <http://waterline.test" + e.incidentPath() + ">",
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("export lacks %q:\n%s", want, r.body)
		}
	}
}

func TestUISnapshotOutlivesRetention(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	before := b.get(e.incidentPath())
	rowsBefore := before.testid("sample-row").Text()
	// Resolving through the API freezes the incident.
	if r := e.post("/api/v1"+e.incidentPath()+"/resolve", "application/json", nil); r.status != 200 {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM snapshots WHERE incident_id = $1`, e.id); n != 1 {
		t.Fatalf("%d snapshots after resolve", n)
	}
	// Retention drops everything the page was made of.
	for _, q := range []string{`DELETE FROM samples`, `DELETE FROM points`, `DELETE FROM events`, `DELETE FROM analyses`} {
		if _, err := e.pool.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	after := b.get(e.incidentPath())
	if after.status != 200 {
		t.Fatalf("page after retention: %d", after.status)
	}
	after.mustHave(t, "frozen page", "snapshot-banner", "cause", "sample-row", "conc-table")
	if got := after.testid("sample-row").Text(); got != rowsBefore {
		t.Errorf("frozen sample table differs from the live one")
	}
	if after.doc.Find(`[data-testid=lane-latency] svg path`).Length() == 0 || after.doc.Find(`[data-testid=lane-qps] svg path`).Length() == 0 {
		t.Error("frozen timeline has no latency or QPS curve")
	}
	// The live view is empty now, and says so.
	live := b.get(e.incidentPath() + "?live=1")
	if live.testid("sample-row").Length() != 0 {
		t.Error("live view still shows samples after they were deleted")
	}
	// Filters and sample details work on the frozen copy.
	f := b.get(e.incidentPath() + "?tenant=" + tenantB + "&tab=baseline")
	if f.testid("sample-row").Length() == 0 {
		t.Error("no baseline samples of tenant B in the snapshot")
	}
	link, _ := after.testid("sample-link").First().Attr("href")
	if d := b.fragment(link, "sample-detail"); d.status != 200 || d.testid("sample-detail-body").Length() == 0 {
		t.Errorf("sample detail from the snapshot: %d", d.status)
	}
	md := b.get(e.incidentPath() + "/export.md")
	if !strings.Contains(md.body, "Capacity / traffic peak") {
		t.Error("export after retention lost the analysis")
	}
}

func TestUIPendingAndRecomputing(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	// A newer version is being computed: the page keeps showing the ready
	// one and polls; the poll answers with the banner until it is done.
	if _, err := e.st.StartAnalysis(context.Background(), e.id, "newer"); err != nil {
		t.Fatal(err)
	}
	p := b.get(e.incidentPath())
	p.mustHave(t, "recomputing page", "analysis-pending", "cause")
	if !strings.Contains(p.testid("analysis-pending").Text(), "Recomputing") {
		t.Errorf("banner %q", p.testid("analysis-pending").Text())
	}
	poll, _ := p.testid("analysis-pending").Attr("hx-get")
	r := b.fragment(poll, "analysis-banner")
	if r.status != 200 || r.header.Get("HX-Refresh") != "" || r.testid("analysis-pending").Length() == 0 || strings.Contains(r.body, "<html") {
		t.Errorf("poll while pending: %d refresh %q %.200s", r.status, r.header.Get("HX-Refresh"), r.body)
	}
	// A new incident without any analysis: pending, queued for analysis.
	before := len(e.incidentChanges())
	var inc struct{ ID int64 }
	res := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"fresh","start":%q}`, testNow.Add(-2*time.Hour).Format(time.RFC3339))))
	if err := json.Unmarshal(res.body, &inc); err != nil {
		t.Fatal(err)
	}
	p = b.get("/incidents/" + strconv.FormatInt(inc.ID, 10))
	p.mustHave(t, "pending page", "analysis-pending")
	if p.testid("cause").Length() != 0 {
		t.Error("causes shown without an analysis")
	}
	if len(e.incidentChanges()) < before+2 { // created, then queued by the page
		t.Errorf("the page did not queue the missing analysis: %v", e.incidentChanges())
	}
}

// A source that pulls without error but stores no point is marked on the
// home page: its query matches nothing in Prometheus.
func TestUIHomeMarksSourcesWithoutSeries(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	cursor := testNow.Add(-time.Minute)
	if err := e.st.AdvancePullCursor(ctx, "inference/qps@model", cursor, testNow, 120); err != nil {
		t.Fatal(err)
	}
	if err := e.st.AdvancePullCursor(ctx, "vllm/latency_p99@model", cursor, testNow, 0); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.login(e.read)
	home := b.get("/")
	marks := home.testid("no-series")
	if marks.Length() != 1 {
		t.Fatalf("%d sources marked without series, want 1", marks.Length())
	}
	if row := marks.Closest("tr").Text(); !strings.Contains(row, "vllm/latency_p99@model") {
		t.Errorf("the mark is on %q, want the vllm source's row", row)
	}
}

// A browser's navigation gets the page above the fold and htmx loads the
// rest when scrolled to. Without script that never happens: the region's
// link must then lead to the whole page — a browser with scripts off
// still sends Sec-Fetch-Mode: navigate, and got the light page again.
func TestLazyRegionLinkWorksWithoutScript(t *testing.T) {
	e := newUIEnv(t)
	w := e.browser()
	w.login(e.read)
	nav := map[string]string{"Sec-Fetch-Mode": "navigate"}
	for _, base := range []string{e.incidentPath(), e.sharePath(t)} {
		light := w.do("GET", base, nil, nav)
		link, ok := light.doc.Find(`[data-testid=filtered-lazy] a`).Attr("href")
		if light.status != 200 || !ok || light.testid("sample-table").Length() != 0 {
			t.Fatalf("%s: navigation got %d, lazy link %q, sample table %d", base, light.status, link, light.testid("sample-table").Length())
		}
		whole := w.do("GET", link, nil, nav)
		if whole.status != 200 || whole.testid("filtered-lazy").Length() != 0 || whole.testid("sample-table").Length() == 0 {
			t.Errorf("%s: following %q without script: %d, lazy %d, sample table %d", base, link, whole.status,
				whole.testid("filtered-lazy").Length(), whole.testid("sample-table").Length())
		}
	}
}

// An open incident is re-analysed as data comes in. Its page says when a
// newer version is ready, and while one is computed, without reloading
// under its reader: a page loaded between recomputes never polled ("v1"
// stayed), and the poll's banner forgot it was recomputing.
func TestAnalysisPollOffersNewerVersions(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	b := e.browser()
	b.login(e.read)
	inc := e.incidentPath()
	page := b.get(inc)
	poll, ok := page.doc.Find(`#analysis-banner`).Attr("hx-get")
	if !ok || !strings.HasSuffix(poll, "/status?shown=1") {
		t.Fatalf("an open incident's page showing v1 polls %q", poll)
	}
	v, err := e.st.StartAnalysis(ctx, e.id, "more data")
	if err != nil {
		t.Fatal(err)
	}
	r := b.fragment(poll, "analysis-banner")
	if r.header.Get("HX-Refresh") != "" || !strings.Contains(r.body, "Recomputing") || !strings.Contains(r.body, "version 1") {
		t.Errorf("while v2 is computed: HX-Refresh %q, %s", r.header.Get("HX-Refresh"), r.body)
	}
	body, _ := json.Marshal(e.analysis())
	if err := e.st.FinishAnalysis(ctx, e.id, v, body, ""); err != nil {
		t.Fatal(err)
	}
	r = b.fragment(poll, "analysis-banner")
	if r.header.Get("HX-Refresh") != "" || !strings.Contains(r.body, "analysis-newer") || !strings.Contains(r.body, "version 2") {
		t.Errorf("v2 ready, v1 shown: HX-Refresh %q, %s", r.header.Get("HX-Refresh"), r.body)
	}
	r = b.fragment(inc+"/status?shown=2", "analysis-banner")
	if r.header.Get("HX-Refresh") != "" || strings.Contains(r.body, `class="banner`) || !strings.Contains(r.body, "every 15s") {
		t.Errorf("v2 ready and shown: HX-Refresh %q, %s", r.header.Get("HX-Refresh"), r.body)
	}
}

// A fleet pulled every minute: the explorer over 30 minutes (the same
// lanes as an incident page after one "zoom in") drew the legend and the
// scale but no line, because the store keeps the points 60 s apart in
// 15 s chart buckets and the line drawer lifted the pen over every gap
// longer than 2.5 chart steps.
func TestExploreLaneDrawsAOneMinuteSeries(t *testing.T) {
	e := newUIEnv(t)
	from := e.spikeAt.Add(-2 * time.Hour).Truncate(time.Minute)
	c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "minutely"}}
	for at := from; at.Before(e.spikeAt.Add(time.Hour)); at = at.Add(time.Minute) {
		c.Points = append(c.Points, correlate.Point{T: at.UnixMilli(), V: 120})
	}
	storetest.WriteCurves(t, e.st, []correlate.Curve{c})
	w := e.browser()
	w.login(e.read)
	lo := e.spikeAt.Add(-15 * time.Minute).Truncate(time.Minute)
	p := w.get("/explore?model=minutely&from=" + lo.Format(time.RFC3339) + "&to=" + lo.Add(30*time.Minute).Format(time.RFC3339))
	if p.status != http.StatusOK {
		t.Fatalf("explore: %d", p.status)
	}
	path := p.doc.Find(`[data-testid=lane-latency] svg path`)
	if path.Length() == 0 {
		t.Fatalf("no latency path drawn; lane says %q", p.testid("lane-latency").Text())
	}
	if d := path.First().AttrOr("d", ""); !strings.ContainsAny(d, "lL") {
		t.Errorf("a 1-minute P99 series over 30 min: the lane has a legend and a scale but no line (d=%.100s…)", d)
	}
}

// The explorer's default view is "the last three hours", but its form was
// pre-filled with that window's absolute from/to, so the first filter the
// reader applied — say model=chat mid-incident — pinned the window to the
// moment the page was loaded, and every later "Show", reload or pasted
// link kept showing the old window. The default window's fields stay
// empty now (its bounds are their placeholders).
func TestExploreFilterKeepsTheLiveWindow(t *testing.T) {
	var mu sync.Mutex
	now := testNow
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := &uiEnv{apiEnv: newAPIEnvAt(t, clock)}
	w := e.browser()
	w.login(e.read)
	p := w.get("/explore")
	form := p.testid("explore-form")
	from, to := form.Find(`input[name=from]`).AttrOr("value", ""), form.Find(`input[name=to]`).AttrOr("value", "")
	mu.Lock()
	now = now.Add(20 * time.Minute) // the incident goes on
	mu.Unlock()
	// The reader types a model and presses Show: htmx sends the form.
	q := url.Values{"from": {from}, "to": {to}, "model": {"chat"}, "version": {""}, "tenant": {""}, "replica": {""}, "node": {""}}
	r := w.fragment("/explore?"+q.Encode(), "filtered")
	if r.status != http.StatusOK {
		t.Fatalf("explore: %d", r.status)
	}
	end := r.testid("timeline").AttrOr("data-to", "")
	if want := strconv.FormatInt(clock().Truncate(time.Minute).UnixMilli(), 10); end != want {
		t.Errorf("live explorer filtered to model=chat 20 min after it was opened: the window still ends at %s (the load time), not now; pushed URL pins from=%s&to=%s",
			time.UnixMilli(mustInt(t, end)).UTC().Format(time.RFC3339), from, to)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An LLM's samples carry their token counts: the incident's sample table
// grows a Tokens column (prompt → generated) and a request's detail lists
// them; a page whose requests carry none has no such column.
func TestSampleTableShowsTokenCounts(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	if p := b.get(e.incidentPath()); p.testid("sample-tokens").Length() != 0 || strings.Contains(p.testid("sample-table").Text(), "Tokens") {
		t.Fatal("a Tokens column without token counts")
	}
	// The slowest requests of the window, with their counts.
	var nd strings.Builder
	for i := range 3 {
		at := e.spikeAt.Add(time.Duration(i+1) * time.Minute)
		fmt.Fprintf(&nd, `{"request_id":"llm-%d","time":%q,"model":"chat","tenant":%q,"replica":"chat-a","total_ms":%d,"input_tokens":812,"output_tokens":%d}`+"\n",
			i, at.Format(time.RFC3339), tenantA, 9000+i, 1024*(i+1))
	}
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(nd.String())))
	p := b.get(e.incidentPath() + "?pick=slowest")
	cells := p.testid("sample-tokens")
	if cells.Length() != 25 || strings.TrimSpace(cells.First().Text()) != "812 → 3,072" {
		t.Fatalf("%d token cells, first %q; want 25, the slowest request's 812 → 3,072", cells.Length(), cells.First().Text())
	}
	href, _ := p.testid("sample-link").First().Attr("href")
	if d := b.get(href); !strings.Contains(d.body, "812 → 3,072") {
		t.Errorf("the request's detail lacks its tokens: %.300s", d.body)
	}
}

// Every count of samples on the incident page says whose and over which
// window, and the heatmap's is the view's stored count, not the rows it
// drew (the faster ones are thinned): "25,855 request samples" beside
// "32,494 samples in this view" read as a contradiction.
func TestUISampleCountsSayWhatTheyCount(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	p := b.get(e.incidentPath())
	if p.status != 200 {
		t.Fatalf("incident page: %d %.500s", p.status, p.body)
	}
	// (The data line's count is correlate's sentence: its goldens hold it.)
	if got := p.testid("sample-range").Text(); !strings.Contains(got, "slow samples of all models from the onset (") {
		t.Errorf("sample range %q does not say whose samples, over which window", got)
	}
	heat := strings.Join(strings.Fields(p.testid("heatmap").Find("p.small").First().Text()), " ")
	canvas := p.testid("heatmap-canvas")
	fromMs, _ := strconv.ParseInt(canvas.AttrOr("data-from", ""), 10, 64)
	toMs, _ := strconv.ParseInt(canvas.AttrOr("data-to", ""), 10, 64)
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM samples WHERE time >= $1 AND time < $2`,
		time.UnixMilli(fromMs), time.UnixMilli(toMs)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s request samples of all models in this view (", thousandsTest(n))
	if n == 0 || !strings.HasPrefix(heat, want) {
		t.Errorf("heatmap says %q, want it to begin %q (the samples stored in the view)", heat, want)
	}
}

// thousandsTest writes n with thousands separators, as the page does.
func thousandsTest(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
