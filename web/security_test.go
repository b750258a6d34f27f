package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
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

// Alertmanager notifications and new incidents are checked like every
// other ingest: a NUL byte, an oversized text or a time outside the
// ingest window is a 422 naming the field, and nothing is stored.
func TestAlertAndIncidentInputChecked(t *testing.T) {
	e := newAPIEnv(t)
	at := testNow.Add(-10 * time.Minute).Format(time.RFC3339)
	alert := func(groupKey, labels, annotations, startsAt string) string {
		return fmt.Sprintf(`{"version":"4","groupKey":%s,"status":"firing","commonLabels":{"alertname":"P99High"},
			"commonAnnotations":%s,"alerts":[{"status":"firing","labels":%s,"startsAt":%q}]}`, groupKey, annotations, labels, startsAt)
	}
	big := strings.Repeat("x", 200<<10)
	for _, c := range []struct {
		name, body, field string
	}{
		{"year 1", alert(`"g"`, `{"alertname":"P99High"}`, `{}`, "0001-01-01T00:00:01Z"), "alerts[0].startsAt"},
		{"year 1969", alert(`"g"`, `{"alertname":"P99High"}`, `{}`, "1969-12-31T00:00:00Z"), "alerts[0].startsAt"},
		{"year 9999", alert(`"g"`, `{"alertname":"P99High"}`, `{}`, "9999-12-31T00:00:00Z"), "alerts[0].startsAt"},
	} {
		r := e.post("/api/v1/alerts/alertmanager", "application/json", []byte(c.body))
		if r.status != http.StatusUnprocessableEntity || r.err.Field != c.field {
			t.Errorf("%s: %d field %q (%s), want 422 field %q", c.name, r.status, r.err.Field, r.err.Error, c.field)
		}
	}
	// A resolution dated in the far future is refused too.
	r := e.post("/api/v1/alerts/alertmanager", "application/json", []byte(fmt.Sprintf(`{"version":"4","groupKey":"g","status":"resolved",
		"alerts":[{"status":"resolved","labels":{"alertname":"A"},"startsAt":%q,"endsAt":"9999-01-01T00:00:00Z"}]}`, at)))
	if r.status != http.StatusUnprocessableEntity || r.err.Field != "alerts[0].endsAt" {
		t.Errorf("endsAt in 9999: %d field %q", r.status, r.err.Field)
	}

	day := 24 * time.Hour
	old, future := testNow.Add(-400*day).Format(time.RFC3339), testNow.Add(2*time.Hour).Format(time.RFC3339)
	for _, c := range []struct{ name, body, field string }{
		{"year 1 to 9999", `{"title":"x","start":"0001-01-01T00:00:00Z","end":"9999-12-31T23:59:59Z"}`, "start"},
		{"older than the ingest window", fmt.Sprintf(`{"title":"x","start":%q}`, old), "start"},
		{"ends in 9999", fmt.Sprintf(`{"title":"x","start":%q,"end":"9999-12-31T23:59:59Z"}`, at), "end"},
		{"starts in the future", fmt.Sprintf(`{"title":"x","start":%q}`, future), "start"},
		{"NUL in title", fmt.Sprintf(`{"title":"a\u0000","start":%q}`, at), "title"},
		{"600 B title", fmt.Sprintf(`{"title":%q,"start":%q}`, strings.Repeat("t", 600), at), "title"},
		{"unknown field in scope", fmt.Sprintf(`{"title":"x","start":%q,"scope":{"mdl":"a"}}`, at), "scope.mdl"},
	} {
		r := e.post("/api/v1/incidents", "application/json", []byte(c.body))
		if r.status != http.StatusUnprocessableEntity || r.err.Field != c.field {
			t.Errorf("incident %s: %d field %q (%s), want 422 field %q", c.name, r.status, r.err.Field, r.err.Error, c.field)
		}
	}
	for _, table := range []string{"incidents", "alert_receipts", "events"} {
		if n := e.count("SELECT count(*) FROM " + table); n != 0 {
			t.Errorf("%d rows in %s after rejected requests", n, table)
		}
	}

	// Texts Postgres would refuse (NUL) or too long are made storable,
	// not refused: Alertmanager never retries a 4xx.
	for i, c := range []struct{ name, body string }{
		{"NUL in groupKey", alert(`"g\u0000"`, `{"alertname":"P99High"}`, `{}`, at)},
		{"NUL in a label", alert(`"g1"`, `{"alertname":"P99High","model":"chat\u0000"}`, `{}`, at)},
		{"NUL in a label name", alert(`"g2"`, `{"alertname":"P99High","a\u0000":"x"}`, `{}`, at)},
		// Alerts of their own (labels, so fingerprints): the same alert
		// under another group key is the same event.
		{"NUL in an annotation", alert(`"g3"`, `{"alertname":"P99High","case":"3"}`, `{"summary":"a\u0000"}`, at)},
		{"200 KB summary", alert(`"g4"`, `{"alertname":"P99High","case":"4"}`, `{"summary":"`+big+`"}`, at)},
		{"long scope label", alert(`"g5"`, `{"alertname":"P99High","tenant":"`+strings.Repeat("t", 300)+`"}`, `{}`, at)},
	} {
		r := e.post("/api/v1/alerts/alertmanager", "application/json", []byte(c.body))
		if r.status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", c.name, r.status, r.body)
		}
		if n := e.count("SELECT count(*) FROM events WHERE kind = 'alert'"); n != i+1 {
			t.Errorf("%s: %d alert events, want %d", c.name, n, i+1)
		}
	}
	if n := e.count(`SELECT count(*) FROM events WHERE strpos(attrs::text, '\u0000') > 0 OR length(attrs::text) > 20000`); n != 0 {
		t.Errorf("%d events with a NUL or over 20 KB of attrs", n)
	}

	// A long (but not oversized) summary is accepted; the incident's
	// title is cut to the incidents API's 500 bytes.
	r = e.post("/api/v1/alerts/alertmanager", "application/json",
		[]byte(alert(`"g"`, `{"alertname":"P99High","model":"chat"}`, `{"summary":"`+strings.Repeat("é", 2000)+`"}`, at)))
	if r.status != http.StatusOK {
		t.Fatalf("a 4 KB summary: %d %s", r.status, r.body)
	}
	var title string
	if err := e.pool.QueryRow(t.Context(), "SELECT title FROM incidents WHERE group_key = 'g'").Scan(&title); err != nil {
		t.Fatal(err)
	}
	if len(title) > 500 || !strings.HasPrefix(title, "P99High: éé") || !strings.HasSuffix(title, "…") {
		t.Errorf("title of %d bytes: %.80q…", len(title), title)
	}
}

// slowClient opens a request with a body of length bytes and sends prefix
// at once; the rest is left to the caller (a trickle, or nothing). It
// returns the connection and a channel with the answer's status line.
func slowClient(t *testing.T, e *apiEnv, path, ctype string, length int, prefix []byte) (net.Conn, <-chan string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		path, e.write, ctype, length)
	if _, err := conn.Write(prefix); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			line = "error: " + err.Error()
		}
		answer <- strings.TrimSpace(line)
	}()
	return conn, answer
}

// Eight clients trickling sample bodies at a few bytes a second do not
// hold the four ingest slots: a normal ingest is not delayed by more than
// a second.
func TestSlowUploadsDoNotStallIngest(t *testing.T) {
	e := newAPIEnv(t)
	start := time.Now()
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", ndjson(0, 2000)))
	alone := time.Since(start)

	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 8; i++ {
		conn, _ := slowClient(t, e, "/api/v1/samples", "application/x-ndjson", 100000, []byte(sampleLine(100000 + i)[:20]))
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the slow requests are in
	start = time.Now()
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", ndjson(2000, 4000)))
	if d := time.Since(start); d > alone+time.Second {
		t.Errorf("ingest took %v next to 8 slow uploads, %v alone", d, alone)
	}
}

// A body that stops arriving after its first chunk is cut off by the
// minimum rate (408), releasing its slot; events, like samples, wait for
// a slot: with one slot, a second events request is answered only after
// the stalled one.
func TestStalledBodyTimesOutAndEventsAreBounded(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.IngestConcurrency = 1; c.BodyGrace = time.Second })
	var prefix bytes.Buffer
	for prefix.Len() < 40<<10 {
		fmt.Fprintf(&prefix, `{"kind":"deploy","time":%q,"model":"chat","summary":"rollout %d"}`+"\n",
			testNow.Add(-time.Hour).Format(time.RFC3339), prefix.Len())
	}
	_, stalled := slowClient(t, e, "/api/v1/events", "application/x-ndjson", prefix.Len()+1000, prefix.Bytes())
	time.Sleep(300 * time.Millisecond) // it holds the only slot now
	second := make(chan response, 1)
	go func() {
		second <- e.post("/api/v1/events", "application/x-ndjson",
			[]byte(fmt.Sprintf(`{"kind":"deploy","time":%q,"model":"chat"}`+"\n", testNow.Add(-time.Hour).Format(time.RFC3339))))
	}()
	var first string
	select {
	case first = <-stalled:
	case r := <-second:
		t.Fatalf("the second events request was answered (%d) while the first held the only slot", r.status)
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled body was never cut off")
	}
	if !strings.Contains(first, " 408 ") {
		t.Errorf("stalled body: %q, want 408", first)
	}
	if r := <-second; r.status != http.StatusOK {
		t.Errorf("second events request: %d %s", r.status, r.body)
	}
	if n := e.count("SELECT count(*) FROM events"); n != 1 {
		t.Errorf("%d events stored, want the second request's one", n)
	}
}

// Anonymous sign-in bodies have their own slots: stalled /login bodies
// held the slots authenticated API writes (incidents, webhooks) wait for,
// and an incident opened by a ticketing system waited for them to time out.
func TestStalledSignInsDoNotHoldAPISlots(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.IngestConcurrency = 1; c.BodyGrace = 30 * time.Second })
	// Past the first chunk (32 KiB) a body takes its slot; the rest never
	// comes.
	prefix := []byte("token=" + strings.Repeat("a", 33<<10))
	for range 6 {
		slowClient(t, e, "/login", "application/x-www-form-urlencoded", 60000, prefix)
	}
	time.Sleep(300 * time.Millisecond) // they hold their slots now
	done := make(chan response, 1)
	go func() {
		done <- e.post("/api/v1/incidents", "application/json",
			[]byte(fmt.Sprintf(`{"title":"t","start":%q}`, testNow.Add(-time.Hour).Format(time.RFC3339))))
	}()
	select {
	case r := <-done:
		if r.status != http.StatusCreated {
			t.Errorf("incident: %d %s", r.status, r.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening an incident waited for stalled sign-ins")
	}
}

// Webhooks: internal targets are refused at registration unless allowed,
// and query-string values (secrets such as ?api_key=) never come back in
// answers.
func TestWebhookTargetsAndMasking(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.WebhookAllowPrivate = false })
	reg := func(u string) response {
		b := fmt.Sprintf(`{"url":%q,"secret":"0123456789abcdef0123"}`, u)
		return e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json", body: []byte(b)})
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::1]:8080/x", "http://0x7f000001/x",
		"http://127.0.0.1:5432/", "http://10.1.2.3/", "http://[fe80::1]/", "http://0.0.0.0:80/", "http://2130706433/"} {
		if r := reg(u); r.status != http.StatusUnprocessableEntity || r.err.Field != "url" {
			t.Errorf("%s: %d field %q", u, r.status, r.err.Field)
		}
	}
	r := reg("https://user:pw@hooks.example.com/in?api_key=s3cr3t&team=ops&flag")
	if r.status != http.StatusCreated {
		t.Fatalf("public receiver: %d %s", r.status, r.body)
	}
	list := e.do(request{method: "GET", path: "/api/v1/webhooks", token: e.admin})
	for _, body := range [][]byte{r.body, list.body} {
		if bytes.Contains(body, []byte("s3cr3t")) || bytes.Contains(body, []byte(":pw@")) || bytes.Contains(body, []byte("ops")) {
			t.Errorf("a secret in the answer: %s", body)
		}
		if !bytes.Contains(body, []byte("api_key=xxxxx")) {
			t.Errorf("query names are not kept: %s", body)
		}
	}
	// A user name without a password is a token (Go sends it as basic
	// auth), and so is a bare query key: both are masked too.
	r = reg("https://apitoken123@hooks.example.com/in?barekey456")
	if r.status != http.StatusCreated || bytes.Contains(r.body, []byte("apitoken123")) || bytes.Contains(r.body, []byte("barekey456")) ||
		!bytes.Contains(r.body, []byte("hooks.example.com/in")) {
		t.Errorf("token-only user info or bare query key: %d %s", r.status, r.body)
	}
	if n := e.count("SELECT count(*) FROM webhooks"); n != 2 {
		t.Errorf("%d webhooks stored, want 2", n)
	}
}

// A revoked token stops working at once — the revocation is announced
// through Postgres and empties the lookup caches, which hold a token for
// 5 s — for the API and for the browser sessions it started.
func TestRevokedTokenStopsAtOnce(t *testing.T) {
	e := newAPIEnv(t)
	waitTokenCacheServes(t, e)
	secret, tok, err := e.st.CreateToken(t.Context(), "soon-revoked", "read")
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.login(secret)
	if r := e.do(request{method: "GET", path: "/api/v1/incidents", token: secret}); r.status != http.StatusOK {
		t.Fatalf("before: %d", r.status)
	}
	if p := b.get("/"); p.status != http.StatusOK {
		t.Fatalf("page before: %d", p.status)
	}
	// The token and session are cached now (a second use within 5 s).
	e.do(request{method: "GET", path: "/api/v1/incidents", token: secret})
	b.get("/")
	if _, err := e.st.RevokeToken(t.Context(), 0, "soon-revoked", testNow); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	api, page := time.Duration(0), time.Duration(0)
	for (api == 0 || page == 0) && time.Since(revoked) < 15*time.Second {
		if api == 0 && e.do(request{method: "GET", path: "/api/v1/incidents", token: secret}).status == http.StatusUnauthorized {
			api = time.Since(revoked)
		}
		if page == 0 && b.get("/").status == http.StatusSeeOther {
			page = time.Since(revoked)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if api == 0 || api > time.Second || page == 0 || page > time.Second {
		t.Errorf("revoked token still worked: API for %v, pages for %v (0 = past 15 s)", api, page)
	}
	if _, err := e.st.RevokeToken(t.Context(), tok.ID, "", testNow); err == nil {
		t.Error("revoking a revoked token again did not say it was not found")
	}
}

// waitTokenCacheServes waits until the server's token cache serves (its
// revocation listener listens): else a revocation test passes on fresh
// lookups alone and says nothing about the announcement. A probe token
// revoked behind the server's back (plain SQL, no announcement) that
// still works shows the cache serving. Each probe refused is a failed
// authentication for the rate limiter: it waits for the limiter to
// forget them (one a second) before returning.
func waitTokenCacheServes(t *testing.T, e *apiEnv) {
	t.Helper()
	for i := 0; ; i++ {
		secret, tok, err := e.st.CreateToken(t.Context(), fmt.Sprintf("probe-%d", i), "read")
		if err != nil {
			t.Fatal(err)
		}
		e.do(request{method: "GET", path: "/api/v1/incidents", token: secret})
		if _, err := e.pool.Exec(t.Context(), `UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, tok.ID); err != nil {
			t.Fatal(err)
		}
		if e.do(request{method: "GET", path: "/api/v1/incidents", token: secret}).status == http.StatusOK {
			time.Sleep(time.Duration(i) * time.Second) // the failed probes' tokens come back
			return
		}
		if i == 50 {
			t.Fatal("the token cache never served: the revocation listener does not listen")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Every answer carries the CSP, anti-framing, nosniff and no-referrer
// headers; pages hold no inline script or event-handler attribute the
// CSP would block; signed-in assets are not for shared caches.
func TestSecurityHeadersAndCaching(t *testing.T) {
	e := newUIEnv(t)
	b := e.browser()
	b.login(e.read)
	paths := []string{"/", "/explore", e.incidentPath(), e.incidentPath() + "/export.md", e.incidentPath() + "/og.png",
		"/login", "/no-such-page", "/api/openapi.json", "/healthz"}
	for _, p := range paths {
		r := b.get(p)
		for h, want := range map[string]string{
			"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
		} {
			if got := r.header.Get(h); got != want {
				t.Errorf("%s: %s %q, want %q", p, h, got, want)
			}
		}
		csp := r.header.Get("Content-Security-Policy")
		for _, d := range []string{"script-src 'self';", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s: CSP %q lacks %s", p, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-eval") || strings.Contains(strings.SplitN(strings.SplitN(csp, "script-src", 2)[1], ";", 2)[0], "unsafe-inline") {
			t.Errorf("%s: CSP allows inline or eval'd scripts: %q", p, csp)
		}
		if r.doc == nil {
			continue
		}
		r.doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			if src, ok := s.Attr("src"); !ok || !strings.HasPrefix(src, "/static/") {
				t.Errorf("%s: inline or foreign script %q", p, s.Text())
			}
		})
		r.doc.Find("*").Each(func(_ int, s *goquery.Selection) {
			for _, a := range s.Nodes[0].Attr {
				if strings.HasPrefix(a.Key, "on") || strings.HasPrefix(a.Key, "hx-on") || strings.HasPrefix(strings.TrimSpace(a.Val), "javascript:") ||
					((a.Key == "hx-vals" || a.Key == "hx-headers") && strings.HasPrefix(a.Val, "js:")) {
					t.Errorf("%s: <%s %s=%q> needs inline script", p, s.Nodes[0].Data, a.Key, a.Val)
				}
			}
		})
	}
	if cc := b.get(e.incidentPath() + "/og.png").header.Get("Cache-Control"); cc != "private, max-age=300" {
		t.Errorf("signed-in og.png: Cache-Control %q", cc)
	}
	if cc := b.get(e.incidentPath() + "/export.md").header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
		t.Errorf("export.md: Cache-Control %q", cc)
	}
}

// In Chromium, under the real CSP, pages raise no violation and htmx
// still works (a concentration row filters the samples through a swap).
func TestBrowserUnderCSP(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start")
	_, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: `window.__csp = [];
		document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || '')));`})
	must(t, err, "install the violation listener")
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/login?next="+url.QueryEscape(e.incidentPath())),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`)),
		chromedp.SendKeys(chromedp.ID("token"), e.read),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(), // the timeline, concentration and samples load when scrolled to
	), "sign in")
	if v := evalString(t, ctx, `JSON.stringify(window.__csp)`); v != "[]" {
		t.Errorf("CSP violations on the incident page: %s", v)
	}
	if v := evalString(t, ctx, `String(htmx.config.allowEval)`); v != "false" {
		t.Errorf("htmx.config.allowEval = %s", v)
	}
	must(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=conc-link]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=filter-chip]`)),
		chromedp.Poll[chromedp.Void](`!document.querySelector('#filtered.htmx-request')`),
	), "filter through htmx")
	if v := evalString(t, ctx, `JSON.stringify(window.__csp)`); v != "[]" {
		t.Errorf("CSP violations after an htmx swap: %s", v)
	}
}

// Auth-proxy users: cookie-less requests reuse the user's one session
// row, and proxy users get read scope unless the operator says otherwise.
func TestAuthProxyReusesSessionAndDefaultsToRead(t *testing.T) {
	e := newUIEnv(t, func(c *web.Config) { c.AuthProxyHeader = "X-Forwarded-User" })
	var csrf string
	for i := 0; i < 20; i++ {
		b := e.browser() // a fresh browser each time: no cookie
		p := b.do("GET", e.incidentPath(), nil, map[string]string{"X-Forwarded-User": "alice@example.com"})
		if p.status != http.StatusOK {
			t.Fatalf("proxy user: %d", p.status)
		}
		if csrf != "" && b.csrf != csrf {
			t.Errorf("request %d got another CSRF token", i)
		}
		csrf = b.csrf
	}
	if n := e.count(`SELECT count(*) FROM ui_sessions WHERE user_name = 'proxy:alice@example.com'`); n != 1 {
		t.Errorf("%d sessions for one proxy user after 20 cookie-less requests", n)
	}
	b := e.browser()
	r := b.do("POST", e.incidentPath()+"/freeze", url.Values{"csrf": {csrf}}, map[string]string{"X-Forwarded-User": "alice@example.com"})
	if r.status != http.StatusForbidden {
		t.Errorf("a proxy user froze an incident with the default scope: %d", r.status)
	}
	if r := b.do("GET", e.incidentPath(), nil, map[string]string{"X-Forwarded-User": strings.Repeat("u", 300)}); r.status != http.StatusSeeOther {
		t.Errorf("a 300-byte proxy user name: %d", r.status)
	}
}

// A request id holding "/" (or "%") opens in sample detail: its link is
// escaped, and the escaped id is looked up as sent.
func TestSampleDetailOfRequestIDWithSlash(t *testing.T) {
	e := newUIEnv(t)
	at := e.spikeAt.Add(5 * time.Minute)
	for _, rid := range []string{"gw-1/req/42", "gw%2/x"} {
		body := fmt.Sprintf(`{"request_id":%q,"time":%q,"model":"chat","version":"v1","tenant":%q,"replica":"chat-a","node":"n1","entry":"/v1/chat","batch_size":1,"status":"ok","total_ms":99999,"stages_ms":{"queue":99000,"exec":999},"sample_rate":1}`+"\n",
			rid, at.Format(time.RFC3339), tenantA)
		accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(body)))
		at = at.Add(time.Second)
	}
	b := e.browser()
	b.login(e.read)
	p := b.get(e.incidentPath())
	for _, rid := range []string{"gw-1/req/42", "gw%2/x"} {
		var href string
		p.doc.Find(`[data-testid=sample-row] a`).Each(func(_ int, s *goquery.Selection) {
			if h, _ := s.Attr("href"); strings.Contains(h, url.PathEscape(rid)) {
				href = h
			}
		})
		if href == "" {
			t.Fatalf("no sample row links to %q", rid)
		}
		d := b.get(href)
		if d.status != http.StatusOK || !strings.Contains(d.body, rid) {
			t.Errorf("%s: %d", href, d.status)
		}
	}
}

// syncBuf is a log sink safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A client that goes away before its answer is logged as 499 at info
// level, not as an ERROR with status 500.
func TestClientDisconnectIs499(t *testing.T) {
	var logs syncBuf
	st := store.New(storetest.NewPool(t))
	secret, _, err := st.CreateToken(t.Context(), "w", store.ScopeWrite)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.NewServer(web.Config{PublicURL: "http://x", IngestMaxBytes: 1 << 20, IngestMaxLines: 1000,
		IngestMaxAge: 24 * time.Hour, IngestMaxFuture: time.Hour, RequestTimeout: time.Minute, IngestConcurrency: 1, BodyGrace: 30 * time.Second},
		web.Deps{Store: st, Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), Now: func() time.Time { return testNow }}))
	defer srv.Close()
	e := &apiEnv{t: t, srv: srv, write: secret}
	// One events request holds the only slot, its body unfinished…
	prefix := bytes.Repeat([]byte(" "), 40<<10)
	holder, _ := slowClient(t, e, "/api/v1/events", "application/x-ndjson", len(prefix)+100, prefix)
	defer holder.Close() // before the server closes, which waits for its handler
	time.Sleep(300 * time.Millisecond)
	// …so a second waits for it, and its client gives up.
	body := fmt.Sprintf(`{"kind":"deploy","time":%q}`+"\n", testNow.Add(-time.Hour).Format(time.RFC3339))
	conn, _ := slowClient(t, e, "/api/v1/events", "application/x-ndjson", len(body), []byte(body))
	time.Sleep(300 * time.Millisecond)
	conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `"status":499`) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("an ERROR for a client that went away: %s", line)
		}
		if strings.Contains(line, `"status":499`) {
			found = true
			if !strings.Contains(line, `"level":"INFO"`) {
				t.Errorf("499 not at info: %s", line)
			}
		}
		if strings.Contains(line, `"status":500`) {
			t.Errorf("a 500 for a client that went away: %s", line)
		}
	}
	if !found {
		t.Errorf("no 499 in the log:\n%s", logs.String())
	}
}

// Wrong tokens are answered at a bounded rate per client: after a burst,
// 429 with Retry-After, for sign-in and for the API; a token already in
// use keeps working.
func TestFailedAuthIsRateLimited(t *testing.T) {
	e := newAPIEnv(t)
	// "A token in use" is one the token cache holds: it serves once the
	// revocation listener listens.
	waitTokenCacheServes(t, e)
	if r := e.do(request{method: "GET", path: "/api/v1/incidents", token: e.read}); r.status != http.StatusOK {
		t.Fatalf("valid token: %d", r.status)
	}
	limited := func(r response) bool { return r.status == http.StatusTooManyRequests }
	var last response
	n := 0
	for ; n < 40; n++ {
		last = e.do(request{method: "GET", path: "/api/v1/incidents", token: fmt.Sprintf("wl_guess%d", n)})
		if limited(last) {
			break
		}
		if last.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", n, last.status)
		}
	}
	if n < 15 || n >= 40 {
		t.Fatalf("429 after %d wrong API tokens, want after a burst of about 20", n)
	}
	if r := e.do(request{method: "GET", path: "/api/v1/incidents", token: e.read}); r.status != http.StatusOK {
		t.Errorf("a token in use was refused while the address is limited: %d", r.status)
	}
	// Sign-in shares the client's bucket: refused at once, with Retry-After.
	b := e.browser()
	p := b.get("/login")
	csrf, _ := p.doc.Find(`input[name=csrf]`).Attr("value")
	r := b.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {"wl_wrong"}, "next": {"/"}}, nil)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Errorf("sign-in while limited: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}

	// A fresh client address has its own bucket: 20 wrong sign-ins, then 429.
	f := newAPIEnv(t)
	b = f.browser()
	n = 0
	for ; n < 40; n++ {
		p := b.get("/login")
		csrf, _ := p.doc.Find(`input[name=csrf]`).Attr("value")
		r = b.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {"wl_wrong"}, "next": {"/"}}, nil)
		if r.status == http.StatusTooManyRequests {
			break
		}
	}
	if n < 15 || n >= 40 {
		t.Errorf("429 after %d wrong sign-ins", n)
	}
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
}

// A body that stalls is the network's fault, never the sender's bad
// input: 408 on the annotation and incident routes (the sender may
// retry), and on the Alertmanager route a 503 with Retry-After, since
// Alertmanager retries only server errors and drops a notification
// answered 4xx.
func TestStalledBodiesAreRetryable(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.BodyGrace = 300 * time.Millisecond })
	am := amNotification("firing", 300, testNow.Add(-20*time.Minute), nil)
	for _, tc := range []struct {
		path, ctype string
		body        []byte
		cut         int // bytes sent before the stall
		status      int
	}{
		{"/api/v1/alerts/alertmanager", "application/json", am, len(am) / 2, http.StatusServiceUnavailable},
		{"/api/v1/alerts/alertmanager", "application/json", am, 10, http.StatusServiceUnavailable},
		{"/api/annotations", "application/json", []byte(`{"time":1,"text":"` + strings.Repeat("x", 60000) + `"}`), 40000, http.StatusRequestTimeout},
		{"/api/v1/incidents", "application/json", []byte(`{"title":"` + strings.Repeat("x", 3000) + `"}`), 2000, http.StatusRequestTimeout},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
			tc.path, e.write, tc.ctype, len(tc.body))
		_, _ = conn.Write(tc.body[:tc.cut])
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		body, _ := io.ReadAll(res.Body)
		conn.Close()
		if res.StatusCode != tc.status {
			t.Errorf("%s stalled after %d bytes: %d %s, want %d", tc.path, tc.cut, res.StatusCode, body, tc.status)
		}
		if tc.status == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", tc.path)
		}
	}
}

// The limit is on guessing, not on one client's stale token: a revoked
// token retried from an address behind the same proxy as everyone else
// is refused 401 each time without using the address's bucket (it locked
// out every other token after 20 tries), and a token seen valid is still
// looked up — the store decides — while guesses have the address limited.
func TestStaleTokenDoesNotLockOutItsAddress(t *testing.T) {
	e := newAPIEnv(t)
	secret, _, err := e.st.CreateToken(t.Context(), "old-integration", store.ScopeWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.RevokeToken(t.Context(), 0, "old-integration", testNow); err != nil {
		t.Fatal(err)
	}
	if r := e.do(request{method: "GET", path: "/api/v1/incidents", token: e.read}); r.status != http.StatusOK {
		t.Fatalf("valid token: %d", r.status)
	}
	for i := range 40 {
		if r := e.do(request{method: "GET", path: "/api/v1/incidents", token: secret}); r.status != http.StatusUnauthorized {
			t.Fatalf("revoked token, try %d: %d, want 401", i+1, r.status)
		}
	}
	if r := e.do(request{method: "POST", path: "/api/v1/events", token: e.write, ctype: "application/json", body: []byte(`{"time":"` + testNow.Format(time.RFC3339) + `","kind":"deploy","model":"chat"}`)}); r.status >= 300 {
		t.Fatalf("a first use of a valid token after a stale one's retries: %d %s", r.status, r.body)
	}
	// Guesses, all different, use the bucket up.
	limited := false
	for n := 0; n < 40 && !limited; n++ {
		limited = e.do(request{method: "GET", path: "/api/v1/incidents", token: fmt.Sprintf("wl_guess%d", n)}).status == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("40 different wrong tokens were never limited")
	}
	// Revoking any token empties the token cache: the read token, seen
	// valid before, is looked up again, and passes.
	if _, _, err := e.st.CreateToken(t.Context(), "to-revoke", store.ScopeRead); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.RevokeToken(t.Context(), 0, "to-revoke", testNow); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the revocation is heard
	if r := e.do(request{method: "GET", path: "/api/v1/incidents", token: e.read}); r.status != http.StatusOK {
		t.Errorf("a token seen valid, while guesses have its address limited: %d, want 200", r.status)
	}
}

// Incoming webhooks that carry their credential in the path (Slack,
// Discord, Teams, a token segment of any receiver) were returned whole by
// the webhook API; ticket paths stay readable.
func TestWebhookPathCredentialsMasked(t *testing.T) {
	e := newAPIEnv(t)
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/XXXXsecretXXXX":             "https://hooks.slack.com/services/xxxxx/xxxxx/xxxxx",
		"https://discord.com/api/webhooks/123456789012345678/AbCdEf-token_1234":           "https://discord.com/api/xxxxx/xxxxx/xxxxx",
		"https://acme.webhook.office.com/webhookb2/0f1e2d3c-aaaa/IncomingWebhook/ab12/cd": "https://acme.webhook.office.com/webhookb2/xxxxx/xxxxx/xxxxx/xxxxx",
		"https://chat.example.com/hooks/k3j4h5g6f7d8s9a0q1w2e3r4t5":                       "https://chat.example.com/hooks/xxxxx",
		"https://bot%40acme.com:tok@acme.atlassian.net/rest/api/3/issue/OPS-7/remotelink": "https://bot%40acme.com:xxxxx@acme.atlassian.net/rest/api/3/issue/OPS-7/remotelink",
		"https://sn:pw@acme.service-now.com/api/global/em/jsonv2":                         "https://sn:xxxxx@acme.service-now.com/api/global/em/jsonv2",
	} {
		b := fmt.Sprintf(`{"url":%q,"secret":"0123456789abcdef0123"}`, raw)
		r := e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json", body: []byte(b)})
		var got struct{ URL string }
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &got) != nil {
			t.Fatalf("%s: %d %s", raw, r.status, r.body)
		}
		if got.URL != want {
			t.Errorf("%s shown as %s, want %s", raw, got.URL, want)
		}
	}
	list := e.do(request{method: "GET", path: "/api/v1/webhooks", token: e.admin})
	for _, secret := range []string{"XXXXsecretXXXX", "AbCdEf-token", "k3j4h5g6f7d8s9a0q1w2e3r4t5", "0f1e2d3c"} {
		if bytes.Contains(list.body, []byte(secret)) {
			t.Errorf("the webhook list shows %q", secret)
		}
	}
}
