package web_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/brotli"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/web/webhook"
	"github.com/waterline-dev/waterline/wire"
)

// TestShareLinkReachesOnlyItsIncident walks every share route with
// tampered parameters — windows reaching other incidents, live=1 on a
// frozen incident, filters naming other tenants, samples by id and time —
// and checks that nothing of another incident (its tenants, request ids,
// events, title) ever comes back, and that what lies outside answers
// exactly like something that does not exist.
func TestShareLinkReachesOnlyItsIncident(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	// Another incident three days earlier, and data hours after this one
	// that belongs to no incident: slow requests (they would top the
	// sample table), other tenants, deploys.
	old, after := e.spikeAt.Add(-72*time.Hour), e.spikeAt.Add(3*time.Hour)
	var b strings.Builder
	for i := range 40 {
		for _, at := range []struct {
			t            time.Time
			tenant, kind string
		}{{old, "t-secret-old", "old"}, {after, "t-secret-after", "after"}} {
			fmt.Fprintf(&b, `{"request_id":"leak-%s-%03d","time":%q,"model":"chat","version":"v9","tenant":%q,"replica":"chat-z","node":"n9","entry":"/v1/secret","batch_size":2,"status":"ok","total_ms":5000,"stages_ms":{"queue":4900,"exec":100},"sample_rate":1}`+"\n",
				at.kind, i, at.t.Add(time.Duration(i)*time.Second).Format(time.RFC3339), at.tenant)
		}
	}
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(b.String())))
	accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(fmt.Sprintf(
		`{"id":"ev-old","kind":"deploy","time":%q,"model":"chat","version":"v9","summary":"secret-rollout-old"}
{"id":"ev-after","kind":"config_change","time":%q,"model":"chat","summary":"secret-config-after"}
`, old.Format(time.RFC3339), after.Format(time.RFC3339)))))
	if r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"t-secret-title","start":%q,"end":%q}`,
		old.Add(-10*time.Minute).Format(time.RFC3339), old.Add(20*time.Minute).Format(time.RFC3339)))); r.status != http.StatusCreated {
		t.Fatalf("other incident: %d %s", r.status, r.body)
	}
	tok, err := e.st.CreateShareLink(ctx, e.id)
	if err != nil {
		t.Fatal(err)
	}
	base := "/s/" + tok
	anon := e.browser()
	secrets := []string{"t-secret", "leak-", "secret-rollout", "secret-config", "/v1/secret", "chat-z"}
	// clean checks an answer shows no secret; values the request itself
	// sent (a filter chip repeats them) are not news and are left out.
	clean := func(what string, p page, sent url.Values) {
		t.Helper()
		body := p.body
		for _, vs := range sent {
			for _, v := range vs {
				body = strings.ReplaceAll(body, v, "")
				body = strings.ReplaceAll(body, url.QueryEscape(v), "")
			}
		}
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s: answer %d shows %q", what, p.status, s)
			}
		}
	}
	notFound := anon.get("/s/" + strings.Repeat("A", len(tok)))
	if notFound.status != http.StatusNotFound {
		t.Fatalf("unknown token: %d", notFound.status)
	}
	notFoundFragment := anon.fragment("/s/"+strings.Repeat("A", len(tok)), "sample-table")
	if notFoundFragment.status != http.StatusNotFound {
		t.Fatalf("unknown token, fragment: %d", notFoundFragment.status)
	}
	same404 := func(what string, p page) {
		t.Helper()
		want := notFound
		if p.header.Get("Content-Type") == notFoundFragment.header.Get("Content-Type") && !strings.Contains(p.body, "<html") {
			want = notFoundFragment
		}
		if p.status != http.StatusNotFound || p.body != want.body {
			t.Errorf("%s: %d, want the unknown token's 404 (%d bytes vs %d)", what, p.status, len(p.body), len(want.body))
		}
	}
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	far := url.Values{"from": {rfc(old.Add(-time.Hour))}, "to": {rfc(after.Add(time.Hour))}}
	queries := []url.Values{
		{},
		far,
		{"from": {rfc(old.Add(-time.Hour))}},
		{"to": {rfc(after.Add(time.Hour))}},
		{"from": far["from"], "to": far["to"], "sort": {"time"}, "dir": {"asc"}},
		{"from": far["from"], "to": far["to"], "tab": {"baseline"}},
		{"from": far["from"], "to": far["to"], "tenant": {"t-secret-old"}},
		{"from": far["from"], "to": far["to"], "replica": {"chat-z"}, "version": {"v9"}, "entry": {"/v1/secret"}},
		{"from": far["from"], "to": far["to"], "page": {"2"}},
		{"live": {"1"}},
		{"live": {"1"}, "from": far["from"], "to": far["to"]},
	}
	walk := func(stage string) {
		t.Helper()
		for _, q := range queries {
			path := base
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			p := anon.get(path)
			if p.status != http.StatusOK {
				t.Errorf("%s GET %s: %d", stage, path, p.status)
			}
			clean(stage+" page "+path, p, q)
			for _, target := range []string{"filtered", "sample-table"} {
				clean(stage+" "+target+" "+path, anon.fragment(path, target), q)
			}
			if r := anon.get(strings.Replace(path, base, base+"/og.png", 1)); r.status != http.StatusOK {
				t.Errorf("%s og.png %s: %d", stage, path, r.status)
			}
		}
		// The tampered window did reach into the incident's own data: the
		// page is not just empty.
		if p := anon.get(base + "?" + far.Encode()); !strings.Contains(p.body, "q-0") {
			t.Errorf("%s: the clamped page shows none of the incident's own samples", stage)
		}
		// Wholly outside the incident: 404, like a link that never was.
		for _, q := range []url.Values{
			{"from": {rfc(old.Add(-30 * time.Minute))}, "to": {rfc(old.Add(30 * time.Minute))}},
			{"from": {rfc(after.Add(-30 * time.Minute))}, "to": {rfc(after.Add(30 * time.Minute))}},
		} {
			same404(stage+" window outside the incident", anon.get(base+"?"+q.Encode()))
			same404(stage+" fragment outside the incident", anon.fragment(base+"?"+q.Encode(), "sample-table"))
		}
		// Samples: another incident's (or no incident's) by id and time, with
		// live=1 too, answer exactly like a request id that does not exist.
		for _, s := range []struct {
			rid string
			at  time.Time
		}{{"leak-old-000", old}, {"leak-after-000", after}, {"leak-late-000", e.spikeAt.Add(2 * time.Minute)}, {"no-such-request", e.spikeAt}} {
			ms := strconv.FormatInt(s.at.UnixMilli(), 10)
			for _, extra := range []string{"", "&live=1"} {
				same404(stage+" sample "+s.rid+extra, anon.get(base+"/samples/"+s.rid+"?t="+ms+extra))
				same404(stage+" sample fragment "+s.rid+extra, anon.fragment(base+"/samples/"+s.rid+"?t="+ms+extra, "sample-detail"))
			}
		}
	}
	walk("live incident")

	// A sample of this incident opens; with its time moved out of the
	// incident's window it does not.
	page := anon.get(base)
	detail, _ := page.testid("sample-link").First().Attr("href")
	if r := anon.get(detail); r.status != http.StatusOK {
		t.Fatalf("own sample %s: %d", detail, r.status)
	}
	u, _ := url.Parse(detail)
	q := u.Query()
	q.Set("t", strconv.FormatInt(old.UnixMilli(), 10))
	same404("own request id at another time", anon.get(u.Path+"?"+q.Encode()))

	// Frozen: the snapshot is all a link shows, live=1 or not. A slow
	// request arriving later inside the window is live data only.
	w := e.browser()
	w.login(e.write)
	if r := w.post(e.incidentPath()+"/freeze", nil); r.status != http.StatusSeeOther {
		t.Fatalf("freeze: %d %s", r.status, r.body)
	}
	late := fmt.Sprintf(`{"request_id":"leak-late-000","time":%q,"model":"chat","version":"v1","tenant":"t-secret-late","replica":"chat-z","node":"n9","entry":"/v1/secret","status":"ok","total_ms":9000,"stages_ms":{"queue":8900,"exec":100},"sample_rate":1}`+"\n",
		e.spikeAt.Add(2*time.Minute).Format(time.RFC3339))
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(late)))
	// Signed in, live=1 does show it: the test's late request is real.
	if p := w.get(e.incidentPath() + "?live=1&tenant=t-secret-late"); !strings.Contains(p.body, "leak-late-000") {
		t.Fatal("the late request is not on the signed-in live page; the frozen check below would prove nothing")
	}
	walk("frozen incident")
}

// TestShareTokenNotLogged: the access log names a share route with the
// token redacted, for known and unknown tokens alike.
func TestShareTokenNotLogged(t *testing.T) {
	e := newUIEnv(t)
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := httptest.NewServer(web.NewServer(web.Config{PublicURL: "http://waterline.test", RequestTimeout: time.Minute},
		web.Deps{Store: e.st, Incidents: e.incidents, Registry: prometheus.NewRegistry(), Gatherer: prometheus.NewRegistry(),
			Log: log, Now: func() time.Time { return testNow }, Ready: func(context.Context) error { return nil }}))
	defer srv.Close()
	tok, err := e.st.CreateShareLink(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	unknown := strings.Repeat("B", len(tok))
	// The last three match no route (a trailing slash, a mangled paste):
	// no route parameter names the token there.
	paths := []string{"/s/" + tok, "/s/" + tok + "/og.png", "/s/" + tok + "/samples/q-000001-0?t=1", "/s/" + unknown,
		"/s/" + tok + "/", "/s/" + tok + "/samples/", "/s/" + tok + "/export", "//s/" + tok, "/S/" + tok}
	for _, path := range paths {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	// The access log is written after the handler returns, which can be
	// after the client has its answer (og.png's body was still going out
	// when a loaded CI run read the log): wait for all the lines.
	out := logs.String()
	for deadline := time.Now().Add(5 * time.Second); strings.Count(out, "msg=http ") < len(paths) && time.Now().Before(deadline); out = logs.String() {
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(out, tok) || strings.Contains(out, unknown) {
		t.Errorf("a share token reached the log:\n%s", out)
	}
	if strings.Count(out, "/s/[redacted]") < len(paths) {
		t.Errorf("share requests not logged with the token redacted:\n%s", out)
	}
}

// TestSharePageCache: the share page comes compressed once with a strong
// ETag per encoding, 304 for a browser that has it, and a new ETag as soon
// as anything it shows changes (a new analysis, a freeze); a revoked link
// is a 404 even while its page is cached.
func TestSharePageCache(t *testing.T) {
	e := newUIEnv(t)
	tok, err := e.st.CreateShareLink(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	path := "/s/" + tok
	anon := e.browser()
	get := func(hdr map[string]string) page { t.Helper(); return anon.do("GET", path, nil, hdr) }
	plain := get(map[string]string{"Accept-Encoding": "identity"})
	etag := plain.header.Get("ETag")
	if plain.status != 200 || plain.header.Get("Content-Encoding") != "" || !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
		t.Fatalf("plain: %d encoding %q ETag %q", plain.status, plain.header.Get("Content-Encoding"), etag)
	}
	if cc := plain.header.Get("Cache-Control"); cc != "private, no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	if plain.testid("causes").Length() == 0 {
		t.Fatal("the cached page is not the incident page")
	}
	gz := get(map[string]string{"Accept-Encoding": "gzip, deflate"})
	gzTag := gz.header.Get("ETag")
	if gz.header.Get("Content-Encoding") != "gzip" || gzTag == etag || gzTag == "" {
		t.Fatalf("gzip: encoding %q ETag %q (plain %q)", gz.header.Get("Content-Encoding"), gzTag, etag)
	}
	zr, err := gzip.NewReader(strings.NewReader(gz.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || string(unzipped) != plain.body {
		t.Fatalf("the gzip body is not the page (%v, %d vs %d bytes)", err, len(unzipped), len(plain.body))
	}
	br := get(map[string]string{"Accept-Encoding": "gzip, deflate, br;q=0.9"})
	if br.header.Get("Content-Encoding") != "br" || br.header.Get("ETag") == gzTag || br.header.Get("ETag") == etag {
		t.Fatalf("brotli: encoding %q ETag %q", br.header.Get("Content-Encoding"), br.header.Get("ETag"))
	}
	if unbr, err := io.ReadAll(brotli.NewReader(strings.NewReader(br.body))); err != nil || string(unbr) != plain.body {
		t.Fatalf("the brotli body is not the page (%v)", err)
	}
	if len(br.body) >= len(gz.body) || len(gz.body) >= len(plain.body)/3 {
		t.Errorf("sizes: plain %d, gzip %d, brotli %d", len(plain.body), len(gz.body), len(br.body))
	}
	if r := get(map[string]string{"Accept-Encoding": "br;q=0, gzip"}); r.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("br;q=0 got %q", r.header.Get("Content-Encoding"))
	}
	if !strings.Contains(gz.header.Get("Vary"), "Accept-Encoding") || !strings.Contains(gz.header.Get("Vary"), "HX-Request") {
		t.Errorf("Vary %q", gz.header.Get("Vary"))
	}
	// A browser that has the page gets 304, per encoding.
	if r := get(map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gzTag}); r.status != http.StatusNotModified || r.body != "" {
		t.Errorf("If-None-Match gzip: %d (%d bytes)", r.status, len(r.body))
	}
	if r := get(map[string]string{"Accept-Encoding": "identity", "If-None-Match": `"x", ` + etag}); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match plain: %d", r.status)
	}
	if r := get(map[string]string{"Accept-Encoding": "identity", "If-None-Match": gzTag}); r.status != http.StatusOK {
		t.Errorf("the gzip ETag matched the plain page: %d", r.status)
	}
	// Fragments are cached apart from the page.
	frag := anon.do("GET", path, nil, map[string]string{"HX-Request": "true", "HX-Target": "sample-table", "Accept-Encoding": "identity"})
	if frag.status != 200 || strings.Contains(frag.body, "<html") || frag.header.Get("ETag") == etag {
		t.Errorf("fragment: %d ETag %q", frag.status, frag.header.Get("ETag"))
	}
	// A new analysis version changes the page at once.
	e.storeAnalysis(t)
	after := get(map[string]string{"Accept-Encoding": "identity", "If-None-Match": etag})
	if after.status != http.StatusOK || after.header.Get("ETag") == etag {
		t.Fatalf("after a new analysis: %d ETag %q", after.status, after.header.Get("ETag"))
	}
	// A freeze too.
	w := e.browser()
	w.login(e.write)
	if r := w.post(e.incidentPath()+"/freeze", nil); r.status != http.StatusSeeOther {
		t.Fatalf("freeze: %d", r.status)
	}
	frozen := get(map[string]string{"Accept-Encoding": "identity"})
	if frozen.header.Get("ETag") == after.header.Get("ETag") || frozen.testid("snapshot-banner").Length() == 0 {
		t.Errorf("after a freeze: ETag %q, banner %d", frozen.header.Get("ETag"), frozen.testid("snapshot-banner").Length())
	}
	// Revoked: gone, whatever is cached.
	if r := w.post(e.incidentPath()+"/share/revoke", nil); r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", r.status)
	}
	if r := get(map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gzTag}); r.status != http.StatusNotFound {
		t.Errorf("revoked link: %d", r.status)
	}
}

// TestShareLinkAPI: POST /api/v1/incidents/{id}/share makes a link (write
// scope) that opens the page without an account; making another replaces
// it; DELETE revokes it.
func TestShareLinkAPI(t *testing.T) {
	e := newUIEnv(t)
	path := fmt.Sprintf("/api/v1/incidents/%d/share", e.id)
	if r := e.do(request{method: "POST", path: path, token: e.read}); r.status != http.StatusForbidden {
		t.Fatalf("read scope: %d", r.status)
	}
	if r := e.do(request{method: "DELETE", path: path, token: e.read}); r.status != http.StatusForbidden {
		t.Fatalf("read scope revoke: %d", r.status)
	}
	if r := e.do(request{method: "POST", path: path}); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.status)
	}
	create := func() string {
		t.Helper()
		r := e.do(request{method: "POST", path: path, token: e.write})
		var v struct{ URL string }
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &v) != nil || !strings.HasPrefix(v.URL, "http://waterline.test/s/") {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		return strings.TrimPrefix(v.URL, "http://waterline.test")
	}
	anon := e.browser()
	first := create()
	if p := anon.get(first); p.status != http.StatusOK || p.testid("causes").Length() == 0 {
		t.Fatalf("the API's link: %d", p.status)
	}
	second := create()
	if p := anon.get(first); p.status != http.StatusNotFound {
		t.Errorf("the replaced link: %d", p.status)
	}
	if p := anon.get(second); p.status != http.StatusOK {
		t.Errorf("the new link: %d", p.status)
	}
	if r := e.do(request{method: "DELETE", path: path, token: e.write}); r.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if p := anon.get(second); p.status != http.StatusNotFound {
		t.Errorf("the revoked link: %d", p.status)
	}
	if r := e.do(request{method: "DELETE", path: path, token: e.write}); r.status != http.StatusNoContent {
		t.Errorf("revoking twice: %d", r.status)
	}
	for _, m := range []string{"POST", "DELETE"} {
		if r := e.do(request{method: m, path: "/api/v1/incidents/999999/share", token: e.write}); r.status != http.StatusNotFound {
			t.Errorf("%s unknown incident: %d", m, r.status)
		}
	}
}

// TestWebhookShareLink: a webhook set to include_share_link carries a
// read-only link in every format — the same link in every delivery about
// an incident — that opens the incident without an account; a webhook
// without the setting carries the permalink only; after a revoke the link
// is dead and later deliveries carry none.
func TestWebhookShareLink(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	rc := newHookReceiver(t)
	register := func(path, format string, include bool) int64 {
		t.Helper()
		secret := "secret-for-" + strings.Trim(path, "/") + "-0123456789"
		rc.mu.Lock()
		rc.secrets[path] = secret
		rc.mu.Unlock()
		b, _ := json.Marshal(wire.WebhookCreate{URL: rc.srv.URL + path, Secret: secret, Format: format, IncludeShareLink: include})
		r := e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json", body: b})
		var v wire.Webhook
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &v) != nil || v.IncludeShareLink != include {
			t.Fatalf("register %s: %d %s", path, r.status, r.body)
		}
		return v.ID
	}
	register("/jira", "jira", true)
	register("/snow", "servicenow", true)
	register("/waterline", "waterline", true)
	register("/jira-plain", "jira", false)
	var list wire.WebhookList
	if r := e.do(request{method: "GET", path: "/api/v1/webhooks", token: e.admin}); json.Unmarshal(r.body, &list) != nil || !list.Webhooks[0].IncludeShareLink || list.Webhooks[3].IncludeShareLink {
		t.Fatalf("list: %s", r.body)
	}
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"chat slow again","start":%q,"end":%q}`,
		e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	var inc struct{ ID int64 }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &inc) != nil {
		t.Fatalf("incident: %d %s", r.status, r.body)
	}
	notifier := webhook.NewNotifier(e.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	dispatcher := webhook.NewDispatcher(e.st, webhook.Options{AllowPrivate: true}) // the receiver is on loopback
	drain := func() {
		t.Helper()
		for {
			sent, err := dispatcher.DeliverOne(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !sent {
				return
			}
		}
	}
	if err := notifier.NotifyIncident(ctx, inc.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", inc.ID), "", nil); r.status != http.StatusOK {
		t.Fatalf("resolve: %d", r.status)
	}
	if err := notifier.NotifyIncident(ctx, inc.ID); err != nil {
		t.Fatal(err)
	}
	drain()
	permalink := fmt.Sprintf("http://waterline.test/incidents/%d", inc.ID)
	jiraURL := func(d delivered) string { return d.body["object"].(map[string]any)["url"].(string) }
	jira := rc.deliveries("/jira")
	if len(jira) != 2 {
		t.Fatalf("jira deliveries: %v", events(jira))
	}
	link := jiraURL(jira[0])
	if !strings.HasPrefix(link, "http://waterline.test/s/") || jiraURL(jira[1]) != link {
		t.Fatalf("jira links %q, %q: want one share link", link, jiraURL(jira[1]))
	}
	// Each webhook has its own link, the same in each of its deliveries.
	wl := rc.deliveries("/waterline")
	wlLink, _ := wl[0].body["share_url"].(string)
	if len(wl) != 2 || !strings.HasPrefix(wlLink, "http://waterline.test/s/") || wl[1].body["share_url"] != wlLink || wl[0].body["url"] != permalink {
		t.Errorf("waterline bodies: %s", wl[0].raw)
	}
	snow := rc.deliveries("/snow")
	snowInfo := snow[0].body["records"].([]any)[0].(map[string]any)
	var info map[string]any
	_ = json.Unmarshal([]byte(snowInfo["additional_info"].(string)), &info)
	snowLink, _ := info["share_url"].(string)
	if len(snow) != 2 || !strings.HasPrefix(snowLink, "http://waterline.test/s/") ||
		!strings.HasSuffix(snowInfo["description"].(string), "Read-only link (no account needed): "+snowLink) {
		t.Errorf("servicenow body: %s", snow[0].raw)
	}
	if plain := rc.deliveries("/jira-plain"); len(plain) != 2 || jiraURL(plain[0]) != permalink || strings.Contains(string(plain[0].raw), "/s/") {
		t.Errorf("a webhook without include_share_link: %d deliveries", len(plain))
	}
	// The link opens the incident for someone without an account.
	anon := e.browser()
	path := strings.TrimPrefix(link, "http://waterline.test")
	for _, l := range []string{link, wlLink, snowLink} {
		if p := anon.get(strings.TrimPrefix(l, "http://waterline.test")); p.status != http.StatusOK || !strings.Contains(p.body, "chat slow again") {
			t.Fatalf("the ticket's link %s: %d", l, p.status)
		}
	}
	// Revoked: dead, and what is sent afterwards carries no link.
	if r := e.do(request{method: "DELETE", path: fmt.Sprintf("/api/v1/incidents/%d/share", inc.ID), token: e.write}); r.status != http.StatusNoContent {
		t.Fatalf("revoke: %d", r.status)
	}
	for _, l := range []string{link, wlLink, snowLink} {
		if p := anon.get(strings.TrimPrefix(l, "http://waterline.test")); p.status != http.StatusNotFound {
			t.Errorf("the revoked ticket link %s: %d", l, p.status)
		}
	}
	v, err := e.st.StartAnalysis(ctx, inc.ID, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.FinishAnalysis(ctx, inc.ID, v, []byte(`{"causes":[{"category":"capacity","score":0.8,"summary":"x"}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := notifier.NotifyAnalysis(ctx, inc.ID, v, "", "capacity"); err != nil {
		t.Fatal(err)
	}
	drain()
	jira = rc.deliveries("/jira")
	if len(jira) != 3 || jiraURL(jira[2]) != permalink {
		t.Errorf("after the revoke: %d deliveries, last link %q", len(jira), jiraURL(jira[len(jira)-1]))
	}
	if wl := rc.deliveries("/waterline"); len(wl) != 3 || wl[2].body["share_url"] != nil {
		t.Errorf("after the revoke the waterline body still has a link")
	}
	if p := anon.get(path); p.status != http.StatusNotFound {
		t.Errorf("a later delivery revived the link: %d", p.status)
	}
}

// TestIncidentPageCache: the signed-in page is cached per session — two
// users on the same URL never get each other's page (names, CSRF tokens,
// buttons) — with a strong ETag and 304, and a new page as soon as the
// incident changes.
func TestIncidentPageCache(t *testing.T) {
	e := newUIEnv(t)
	reader, writer := e.browser(), e.browser()
	reader.login(e.read)
	writer.login(e.write)
	path := e.incidentPath()
	gz := map[string]string{"Accept-Encoding": "gzip"}
	r1 := reader.do("GET", path, nil, map[string]string{"Accept-Encoding": "identity"})
	w1 := writer.do("GET", path, nil, map[string]string{"Accept-Encoding": "identity"})
	if r1.status != 200 || w1.status != 200 || r1.header.Get("ETag") == "" || r1.header.Get("ETag") == w1.header.Get("ETag") {
		t.Fatalf("reader %d %q, writer %d %q", r1.status, r1.header.Get("ETag"), w1.status, w1.header.Get("ETag"))
	}
	if r1.testid("freeze").Length() != 0 || w1.testid("freeze").Length() == 0 {
		t.Fatal("a session got the other's page (buttons)")
	}
	if !strings.Contains(r1.body, reader.csrf) || strings.Contains(r1.body, writer.csrf) || !strings.Contains(w1.body, writer.csrf) {
		t.Fatal("a session got the other's CSRF token")
	}
	// Again, from the cache: the same bytes; gzip; 304 with the ETag.
	if again := reader.do("GET", path, nil, map[string]string{"Accept-Encoding": "identity"}); again.body != r1.body || again.header.Get("ETag") != r1.header.Get("ETag") {
		t.Error("the second answer differs")
	}
	g := reader.do("GET", path, nil, gz)
	if g.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("gzip: %q", g.header.Get("Content-Encoding"))
	}
	if r := reader.do("GET", path, nil, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": g.header.Get("ETag")}); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r.status)
	}
	if cc := g.header.Get("Cache-Control"); cc != "private, no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	// A share link made (through the API: not this replica's UI) shows at once.
	if r := e.do(request{method: "POST", path: "/api/v1" + path + "/share", token: e.write}); r.status != http.StatusCreated {
		t.Fatalf("API share: %d", r.status)
	}
	if w := writer.get(path); w.testid("share-since").Length() == 0 {
		t.Error("the cached page does not show the new share link")
	}
	// A new analysis: a new page.
	e.storeAnalysis(t)
	if r := reader.do("GET", path, nil, map[string]string{"Accept-Encoding": "identity", "If-None-Match": r1.header.Get("ETag")}); r.status != 200 || r.header.Get("ETag") == r1.header.Get("ETag") {
		t.Errorf("after a new analysis: %d %q", r.status, r.header.Get("ETag"))
	}
	// Signed out: the cache does not answer.
	reader.post("/logout", nil)
	if r := reader.get(path); r.status != http.StatusSeeOther {
		t.Errorf("after logout: %d", r.status)
	}
}

// TestShareSampleAtTheWindowEdge: a sample half a millisecond before the
// shared window, asked for at the window's first millisecond (the lookup
// spans ±1 ms around t), answers 404, not the sample; and a request id
// longer than any stored one is refused before the database.
func TestShareSampleAtTheWindowEdge(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	start := e.spikeAt.Add(-6 * time.Hour)
	end := start.Add(20 * time.Minute)
	inc, err := e.st.CreateIncident(ctx, store.NewIncident{Title: "edge", Start: start, End: &end})
	if err != nil {
		t.Fatal(err)
	}
	lo := start.Add(-30 * time.Minute)
	line := `{"request_id":"edge-%s","time":%q,"model":"chat","version":"v1","tenant":"t-edge-%s","replica":"chat-a","node":"n1","status":"ok","total_ms":50,"stages_ms":{"exec":50},"sample_rate":1}` + "\n"
	body := fmt.Sprintf(line, "outside", lo.Add(-500*time.Microsecond).Format(time.RFC3339Nano), "outside") +
		fmt.Sprintf(line, "inside", lo.Add(500*time.Microsecond).Format(time.RFC3339Nano), "inside")
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(body)))
	tok, err := e.st.CreateShareLink(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	anon := e.browser()
	ms := strconv.FormatInt(lo.UnixMilli(), 10)
	if p := anon.get("/s/" + tok + "/samples/edge-inside?t=" + ms); p.status != http.StatusOK || !strings.Contains(p.body, "t-edge-inside") {
		t.Fatalf("the sample inside the window: %d", p.status)
	}
	if p := anon.get("/s/" + tok + "/samples/edge-outside?t=" + ms); p.status != http.StatusNotFound || strings.Contains(p.body, "t-edge-outside") {
		t.Errorf("the sample 0.5 ms before the window: %d", p.status)
	}
	if p := anon.get("/s/" + tok + "/samples/" + strings.Repeat("r", 10000) + "?t=" + ms); p.status != http.StatusBadRequest {
		t.Errorf("a 10,000-character request id: %d, want 400", p.status)
	}
}

// TestShareFilterLengthBounded: a filter longer than any label ingest
// stores is a 400 naming it, not a page of megabytes rendered, compressed
// and cached for anyone holding the link.
func TestShareFilterLengthBounded(t *testing.T) {
	e := newUIEnv(t)
	tok, err := e.st.CreateShareLink(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	anon := e.browser()
	for _, k := range []string{"entry", "tenant", "model"} {
		p := anon.get("/s/" + tok + "?" + k + "=" + strings.Repeat("x", 100_000))
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, k) || len(p.body) > 10_000 {
			t.Errorf("%s of 100 kB: %d, %d bytes", k, p.status, len(p.body))
		}
	}
	if p := anon.get("/s/" + tok + "?entry=" + strings.Repeat("x", 256)); p.status != http.StatusOK {
		t.Errorf("entry of 256 bytes: %d", p.status)
	}
}

// An incident about one model is shared as that: its share link shows
// that model's requests (and those of models its analysis found slowed
// too), not every model's in the window — another model's request ids,
// tenants and replicas are not the incident's to give away. Asking for
// another model answers like something that does not exist.
func TestShareLinkKeepsToItsIncidentsModels(t *testing.T) {
	e := newUIEnv(t)
	var b strings.Builder
	for i := range 30 {
		for _, m := range []string{"chat", "embed-secret"} {
			fmt.Fprintf(&b, `{"request_id":"%s-%03d","time":%q,"model":%q,"tenant":"t-%s","replica":"%s-0","total_ms":900,"sample_rate":1}`+"\n",
				m, i, e.spikeAt.Add(time.Duration(i)*time.Second).Format(time.RFC3339), m, m, m)
		}
	}
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(b.String())))
	tok := e.sharedScopedIncident(t, "chat p99", `{"model":"chat"}`)
	anon := e.browser()
	base := "/s/" + tok
	p := anon.get(base)
	if p.status != 200 || !strings.Contains(p.body, "chat-000") {
		t.Fatalf("share page: %d, chat's requests shown: %v", p.status, strings.Contains(p.body, "chat-000"))
	}
	if strings.Contains(p.body, "embed-secret") {
		t.Error("the share page of chat's incident shows another model's requests")
	}
	if r := anon.get(base + "?model=embed-secret"); r.status != http.StatusNotFound {
		t.Errorf("another model through the share link: %d", r.status)
	}
	at := strconv.FormatInt(e.spikeAt.UnixMilli(), 10)
	if r := anon.get(base + "/samples/embed-secret-000?t=" + at); r.status != http.StatusNotFound {
		t.Errorf("another model's sample through the share link: %d", r.status)
	}
	if r := anon.get(base + "/samples/chat-000?t=" + at); r.status != http.StatusOK {
		t.Errorf("the incident's own sample: %d", r.status)
	}
}

// "← earlier" on a share page at the edge of its window moves the view to
// the edge, keeping its length: it was cut to the window each time, and
// each click shrank the view by half.
func TestSharePanKeepsTheViewsLength(t *testing.T) {
	e := newUIEnv(t)
	base := e.sharePath(t)
	anon := e.browser()
	nav := func(p page, text string) string {
		t.Helper()
		href := ""
		p.doc.Find(`a.btn`).Each(func(_ int, s *goquery.Selection) {
			if strings.TrimSpace(s.Text()) == text {
				href, _ = s.Attr("href")
			}
		})
		if href == "" {
			t.Fatalf("no %q link on %s", text, p.body[:200])
		}
		return href
	}
	span := func(href string) time.Duration {
		u, _ := url.Parse(href)
		from, _ := time.Parse(time.RFC3339, u.Query().Get("from"))
		to, _ := time.Parse(time.RFC3339, u.Query().Get("to"))
		return to.Sub(from)
	}
	p := anon.get(nav(anon.get(base), "zoom in"))
	want := span(nav(p, "← earlier"))
	for i := range 4 {
		p = anon.get(nav(p, "← earlier"))
		if p.status != 200 {
			t.Fatalf("click %d: %d", i+1, p.status)
		}
		if got := span(nav(p, "← earlier")); got != want {
			t.Fatalf("after %d clicks on earlier the view is %s long, want %s", i+1, got, want)
		}
	}
}

// An incident scoped to one tenant is shared as that: the timeline's
// events are that tenant's and everyone's (a deploy of the model), never
// another tenant's — the tenant was dropped from the whole timeline query
// because curves seldom carry one, and other tenants' change events (with
// their names) showed on the link. A tenant's own curves stay; another's
// go.
func TestShareLinkKeepsToItsIncidentsTenant(t *testing.T) {
	e := newUIEnv(t)
	at := e.spikeAt.Add(-5 * time.Minute).Format(time.RFC3339)
	accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(fmt.Sprintf(
		`{"id":"ev-other-tenant","kind":"config_change","time":%q,"model":"chat","tenant":"t-globex-secret","summary":"globex-secret-quota"}
{"id":"ev-own-tenant","kind":"config_change","time":%q,"model":"chat","tenant":"t-acme","summary":"acme-own-quota"}
{"id":"ev-everyone","kind":"deploy","time":%q,"model":"chat","version":"v2","summary":"chat-rollout-for-all"}
`, at, at, at))))
	tok := e.sharedScopedIncident(t, "acme p99", `{"model":"chat","tenant":"t-acme"}`)
	anon := e.browser()
	for _, path := range []string{"/s/" + tok, "/s/" + tok + "?whole=1"} {
		p := anon.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", path, p.status)
		}
		if strings.Contains(p.body, "globex") {
			t.Errorf("%s shows another tenant's event", path)
		}
		for _, own := range []string{"acme-own-quota", "chat-rollout-for-all"} {
			if !strings.Contains(p.body, own) {
				t.Errorf("%s lacks the event %q", path, own)
			}
		}
	}
}

// The pages read curves without the tenant (most carry none) and drop
// another tenant's series where some are pulled.
func TestOfTenant(t *testing.T) {
	curves := []correlate.Curve{{Scope: correlate.Scope{Model: "m"}}, {Scope: correlate.Scope{Model: "m", Tenant: "a"}},
		{Scope: correlate.Scope{Model: "m", Tenant: "b"}}}
	got := api.OfTenant(curves, "a")
	if len(got) != 2 || got[0].Scope.Tenant != "" || got[1].Scope.Tenant != "a" {
		t.Errorf("OfTenant: %+v", got)
	}
	if len(curves) != 3 || curves[2].Scope.Tenant != "b" {
		t.Errorf("OfTenant changed its input: %+v", curves)
	}
	if got := api.OfTenant(curves, ""); len(got) != 3 {
		t.Errorf("without a tenant filter, OfTenant kept %d of 3", len(got))
	}
}

// An empty sample table on a share link does not tell whether samples of
// other scopes exist in the window ("no samples match these filters"
// against "no samples for this window"): that is other tenants' news.
func TestShareEmptySampleTableSaysNothingOfOtherScopes(t *testing.T) {
	e := newUIEnv(t) // its window holds two tenants' samples
	tok := e.sharedScopedIncident(t, "quiet tenant", `{"tenant":"t-nobody"}`)
	p := e.browser().get("/s/" + tok)
	if p.status != http.StatusOK {
		t.Fatalf("share page: %d", p.status)
	}
	if strings.Contains(p.body, "No samples match these filters") || !strings.Contains(p.body, "No samples for this window") {
		t.Error("the empty table of a tenant with no samples hints at other tenants' samples")
	}
}

// A share link's unfurl card names no "likely cause" the analysis does
// not claim: latency that could not be judged reads as that, a top cause
// of "unexplained" as nothing standing out; a resolved incident is not
// "ongoing".
func TestShareCardClaimsOnlyWhatTheAnalysisDoes(t *testing.T) {
	e := newUIEnv(t)
	for _, tc := range []struct {
		name string
		edit func(a *correlate.Analysis)
		want string
	}{
		{"not judged", func(a *correlate.Analysis) {
			a.Impact = nil
			a.Headline = correlate.Headline{Title: "Latency rise not judged", Summary: "chat has too little latency data before the onset."}
			a.Causes = []correlate.Cause{{Category: correlate.CatUnexplained, Summary: "Whether latency rose cannot be judged."}}
		}, "Latency rise not judged"},
		{"unexplained", func(a *correlate.Analysis) {
			a.Impact = []correlate.Impact{{Model: "chat", BaselineP99Ms: 100, DuringP99Ms: 900, Status: "ongoing"}}
			a.Causes = []correlate.Cause{{Category: correlate.CatUnexplained, Score: 0.1, Summary: "Nothing stands out."}}
		}, "No cause stands out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.analysis()
			tc.edit(&a)
			e.storeAnalysisOf(t, a)
			p := e.browser().get(e.sharePath(t))
			desc, _ := p.doc.Find(`meta[property="og:description"]`).Attr("content")
			if strings.Contains(desc, "Likely cause") || !strings.Contains(desc, tc.want) {
				t.Errorf("og:description %q, want %q and no likely cause", desc, tc.want)
			}
			if img := e.browser().get(e.sharePath(t) + "/og.png"); img.status != http.StatusOK {
				t.Errorf("og.png: %d", img.status)
			}
		})
	}
	if r := e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", e.id), "application/json", nil); r.status >= 300 {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	p := e.browser().get(e.sharePath(t))
	if desc, _ := p.doc.Find(`meta[property="og:description"]`).Attr("content"); strings.Contains(desc, "ongoing") {
		t.Errorf("a resolved incident's card says ongoing: %q", desc)
	}
}

// A tenant filter on the pages reads curves without the tenant: it brings
// no replica context, and every node curve comes once (a tenant-only
// scope scanned every replica and added every node's curves again).
func TestTenantFilterTimelineHasNoDuplicateCurves(t *testing.T) {
	e := newAPIEnv(t)
	from := testNow.Add(-time.Hour)
	var curves []correlate.Curve
	for i := range 3 {
		for _, c := range []correlate.Curve{
			{Role: correlate.RoleGPUUtil, Level: correlate.LevelNode, Scope: correlate.Scope{Node: fmt.Sprintf("n%d", i)}},
			{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica, Scope: correlate.Scope{Model: "chat", Replica: fmt.Sprintf("chat-%d", i), Node: fmt.Sprintf("n%d", i)}},
		} {
			c.Points = []correlate.Point{{T: from.UnixMilli(), V: 1}, {T: from.Add(time.Minute).UnixMilli(), V: 1}}
			curves = append(curves, c)
		}
	}
	storetest.WriteCurves(t, e.st, curves)
	tv, err := api.Timeline(t.Context(), e.st, api.TimelineQuery{From: from, To: testNow, Step: time.Minute,
		Scope: correlate.Scope{Tenant: "acme"}, CurvesAnyTenant: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, c := range tv.Curves {
		seen[c.Key()]++
		if seen[c.Key()] > 1 {
			t.Errorf("curve %s twice", c.Key())
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct curves, want the 3 node curves", len(seen))
	}
}

// sharedScopedIncident opens an incident over the env's window with the
// scope given (JSON) through the API, and returns its share link's token.
func (e *uiEnv) sharedScopedIncident(t *testing.T, title, scope string) string {
	t.Helper()
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":%q,"scope":%s,"start":%q,"end":%q}`,
		title, scope, e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	if r.status != http.StatusCreated {
		t.Fatalf("incident: %d %s", r.status, r.body)
	}
	var in struct{ ID int64 }
	if err := json.Unmarshal(r.body, &in); err != nil {
		t.Fatal(err)
	}
	tok, err := e.st.CreateShareLink(t.Context(), in.ID)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestShareCardTitleFailsClosed: the unfurl card's title is scrubbed of
// every tenant the incident's samples name; when they cannot be listed
// (the first visitor gave up while the samples were busy) the title is
// left out, never shown unscrubbed — the page is cached and served to
// every later visitor, chat crawlers included.
func TestShareCardTitleFailsClosed(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"chat slow for %s","start":%q,"end":%q}`,
		tenantB, e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	var inc struct{ ID int64 }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &inc) != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	tok, err := e.st.CreateShareLink(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	page := e.srv.URL + "/s/" + tok
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE samples IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	impatient, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	req, _ := http.NewRequestWithContext(impatient, "GET", page, nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
	}
	cancel()
	time.Sleep(300 * time.Millisecond)
	_ = tx.Rollback(ctx)
	for range 3 {
		res, err := http.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := goquery.NewDocumentFromReader(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("share page: %d", res.StatusCode)
		}
		title, _ := doc.Find(`meta[property="og:title"]`).Attr("content")
		if strings.Contains(strings.ToLower(title), tenantB) || !strings.HasPrefix(title, fmt.Sprintf("Incident #%d", inc.ID)) {
			t.Fatalf("og:title %q", title)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWebhookLinksShowOnTheIncidentPage: links a webhook's deliveries
// carry open the incident too; its page says so and offers to revoke
// them. It offered "Create share link" and no revoke while anyone in the
// receiving Jira could open the incident.
func TestWebhookLinksShowOnTheIncidentPage(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	h, err := e.st.CreateWebhook(ctx, store.NewWebhook{URL: "https://hooks.example/x", Secret: "0123456789abcdef0123",
		Format: "waterline", Events: []string{"incident.opened"}, IncludeShareLink: true})
	if err != nil {
		t.Fatal(err)
	}
	w := e.browser()
	w.login(e.write)
	if p := w.get(e.incidentPath()); p.testid("share-webhooks").Length() != 0 {
		t.Fatal("webhook links shown before any was made")
	}
	tok, ok, err := e.st.WebhookShareToken(ctx, e.id, h)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	p := w.get(e.incidentPath())
	if p.testid("share-webhooks").Length() != 1 || p.testid("revoke").Length() != 1 {
		t.Fatalf("webhook link live: share-webhooks %d, revoke %d", p.testid("share-webhooks").Length(), p.testid("revoke").Length())
	}
	if r := w.post(e.incidentPath()+"/share/revoke", nil); r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", r.status)
	}
	if r := e.browser().get("/s/" + tok); r.status != http.StatusNotFound {
		t.Errorf("the webhook's link after revoking: %d", r.status)
	}
	if p := w.get(e.incidentPath()); p.testid("share-webhooks").Length() != 0 {
		t.Error("revoked webhook links still shown")
	}
}

// TestSignedInPageStartsAtTheIncidentsScope: a scoped incident's page opens
// on its scope, as its share link does, as a filter the user may remove
// (the fleet is then one click away, and its URL says so). Signed in, the
// samples of every replica showed, with no filter chip.
func TestSignedInPageStartsAtTheIncidentsScope(t *testing.T) {
	e := newUIEnv(t)
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"chat-b slow","start":%q,"end":%q,"scope":{"replica":"chat-b"}}`,
		e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	var inc struct{ ID int64 }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &inc) != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	w := e.browser()
	w.login(e.read)
	path := fmt.Sprintf("/incidents/%d", inc.ID)
	replicas := func(p page) map[string]int {
		n := map[string]int{}
		p.doc.Find(`[data-testid=sample-row]`).Each(func(_ int, row *goquery.Selection) {
			for _, rep := range []string{"chat-a", "chat-b"} {
				if strings.Contains(row.Text(), rep) {
					n[rep]++
				}
			}
		})
		return n
	}
	scoped := w.fragment(path, "sample-table")
	if n := replicas(scoped); n["chat-a"] != 0 || n["chat-b"] == 0 {
		t.Errorf("the scoped incident's samples: %v, want chat-b's only", n)
	}
	full := w.get(path)
	chip := full.doc.Find(`a.chip.remove[data-testid=filter-chip]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.Text(), "chat-b")
	})
	href, ok := chip.Attr("href")
	if !ok || !strings.Contains(href, "scope=fleet") {
		t.Fatalf("no chip to remove the incident's scope (href %q)", href)
	}
	fleet := w.fragment(href, "sample-table")
	if n := replicas(fleet); n["chat-a"] == 0 {
		t.Errorf("without the incident's scope: %v, want chat-a's too", n)
	}
	// A filter of the user's own replaces the incident's.
	if n := replicas(w.fragment(path+"?replica=chat-a", "sample-table")); n["chat-b"] != 0 || n["chat-a"] == 0 {
		t.Errorf("replica=chat-a on the scoped incident: %v", n)
	}
}

// A share link of an incident scoped to one model and tenant showed, in
// its aligned-changes card and its Markdown export, another tenant's and
// another model's changes: the analysis reads every change of its window
// (from the real analysis here, as the analyzer stores it), and nothing on
// the share path narrowed it. Changes that name no tenant stay.
func TestShareLinkShowsOnlyItsScopesChanges(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	at := e.spikeAt.Add(-5 * time.Minute).Format(time.RFC3339)
	accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(fmt.Sprintf(
		`{"id":"ev-other-tenant","kind":"config_change","time":%q,"model":"chat","tenant":"t-globex-secret","summary":"globex-secret-quota"}
{"id":"ev-other-model","kind":"deploy","time":%q,"model":"embed-secret","version":"v7","summary":"embed-secret-rollout"}
{"id":"ev-own-tenant","kind":"config_change","time":%q,"model":"chat","tenant":"t-acme","summary":"acme-own-quota"}
{"id":"ev-model-wide","kind":"deploy","time":%q,"model":"chat","version":"v9","summary":"chat-own-rollout"}
`, at, at, at, at))))
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"acme p99","scope":{"model":"chat","tenant":"t-acme"},"start":%q,"end":%q}`,
		e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	var in struct{ ID int64 }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &in) != nil {
		t.Fatalf("incident: %d %s", r.status, r.body)
	}
	input, err := diagnose.LoadInput(ctx, e.st, correlate.Window{From: e.from, To: e.to}, correlate.Scope{Model: "chat", Tenant: "t-acme"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.st.StartAnalysis(ctx, in.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(correlate.Analyze(input))
	if err := e.st.FinishAnalysis(ctx, in.ID, v, body, ""); err != nil {
		t.Fatal(err)
	}
	tok, err := e.st.CreateShareLink(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	anon := e.browser()
	for _, path := range []string{"/s/" + tok, "/s/" + tok + "/export.md"} {
		p := anon.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", path, p.status)
		}
		for _, s := range []string{"globex-secret-quota", "t-globex-secret", "embed-secret-rollout"} {
			if strings.Contains(p.body, s) {
				t.Errorf("%s (share of a chat/t-acme incident) shows %q", path, s)
			}
		}
		for _, s := range []string{"acme-own-quota", "chat-own-rollout"} {
			if !strings.Contains(p.body, s) {
				t.Errorf("%s lacks its own scope's change %q", path, s)
			}
		}
	}
	// Signed in, the page shows the analysis whole.
	user := e.browser()
	user.login(e.read)
	if p := user.get(fmt.Sprintf("/incidents/%d", in.ID)); !strings.Contains(p.body, "embed-secret-rollout") {
		t.Errorf("the signed-in page lost another model's change")
	}
}

// The unfurl title is scrubbed of every tenant the incident's window
// names. Once frozen it read them from the snapshot's samples, which are
// thinned: a small tenant's only request left out, its name showed in
// the cached card chat crawlers fetch. The snapshot now keeps the
// window's whole list; one taken before that (no list) leaves the title
// out rather than guess.
func TestFrozenShareTitleScrubsEveryTenant(t *testing.T) {
	e := newUIEnv(t)
	ctx := context.Background()
	var b strings.Builder
	start := e.from.Add(-20 * time.Minute)
	for i := range 8000 {
		fmt.Fprintf(&b, `{"request_id":"bulk-%05d","time":%q,"model":"chat","tenant":"t-bulk","total_ms":10,"sample_rate":1}`+"\n",
			i, start.Add(time.Duration(i)*500*time.Millisecond).Format(time.RFC3339Nano))
	}
	fmt.Fprintf(&b, `{"request_id":"rare-1","time":%q,"model":"chat","tenant":"t-initech","total_ms":11,"sample_rate":1}`+"\n",
		e.spikeAt.Add(1734*time.Millisecond).Format(time.RFC3339Nano))
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(b.String())))
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"checkout slow for t-initech","start":%q,"end":%q}`,
		e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	var inc struct{ ID int64 }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &inc) != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	v, _ := e.st.StartAnalysis(ctx, inc.ID, "test")
	body, _ := json.Marshal(e.analysis())
	if err := e.st.FinishAnalysis(ctx, inc.ID, v, body, ""); err != nil {
		t.Fatal(err)
	}
	tok, _ := e.st.CreateShareLink(ctx, inc.ID)
	anon := e.browser()
	ogTitle := func() string {
		p := anon.get("/s/" + tok)
		s, _ := p.doc.Find(`meta[property="og:title"]`).Attr("content")
		return s
	}
	if s := ogTitle(); strings.Contains(s, "initech") || !strings.Contains(s, "checkout slow") {
		t.Fatalf("before freeze: og:title %q", s)
	}
	if err := e.incidents.Freeze(ctx, inc.ID); err != nil {
		t.Fatal(err)
	}
	sn, err := e.st.LoadSnapshot(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range sn.FrozenSamples {
		if x.Tenant == "t-initech" {
			t.Fatal("the rare tenant's request was frozen: the test no longer shows the thinning")
		}
	}
	if s := ogTitle(); strings.Contains(s, "initech") || !strings.Contains(s, "checkout slow") {
		t.Errorf("after freeze: og:title %q", s)
	}
	// A snapshot taken before the list was kept: no title rather than one
	// that may name a tenant.
	sn.Tenants, sn.TenantsKnown = nil, false
	sn.CreatedAt = sn.CreatedAt.Add(time.Second) // a new snapshot: the page cache follows it
	if err := e.st.SaveSnapshot(ctx, *sn); err != nil {
		t.Fatal(err)
	}
	if s := ogTitle(); strings.Contains(s, "checkout slow") {
		t.Errorf("snapshot without its tenants: og:title %q", s)
	}
}

// A share link's page said why the incident's analysis failed in the
// analyzer's own words: the error of the database read, which names the
// database's host, user and database, a statement timeout, and so on.
// That is the installation's, not the incident's, and a link reaches its
// incident and nothing else: the page says the analysis failed, not why.
// Signed in, the reason stays.
func TestShareLinkDoesNotQuoteAnalysisErrors(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, "")
	const internal = "failed to connect to `user=waterline-svc database=waterline-prod`: 10.42.7.9:5432 (pg-primary.internal)"
	share := e.sharePath(t)
	anon := e.browser()
	user := e.browser()
	user.login(e.read)
	e.storeAnalysis(t)
	e.failAnalysis(t, "store: curves: "+internal)
	p := anon.get(share)
	if p.status != http.StatusOK {
		t.Fatalf("share page %d", p.status)
	}
	banner := strings.TrimSpace(p.doc.Find(`#analysis-banner`).Text())
	if !strings.Contains(banner, "failed") {
		t.Errorf("the share page does not say the re-analysis failed: %q", banner)
	}
	for _, s := range []string{"10.42.7.9", "pg-primary", "waterline-svc", "waterline-prod"} {
		if strings.Contains(p.body, s) {
			t.Errorf("the share page quotes the analysis' error (%q): %q", s, banner)
		}
	}
	if s := user.get(e.incidentPath()); !strings.Contains(s.body, "pg-primary.internal") {
		t.Error("the signed-in page lost the failure's reason")
	}
}

// A reader without an account who holds a share link is never sent where
// only a signed-in user can go: the brand does not link to the incidents
// list (a sign-in page for them), and an error page reached from the link
// (a bad window in its URL) leads back to the shared incident, not to
// "Sign in" or the incidents list.
func TestSharePagesLeadNowhereThatNeedsAnAccount(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, "")
	share := e.sharePath(t)
	anon := e.browser()
	for _, path := range []string{share, share + "?from=banana"} {
		p := anon.get(path)
		if p.doc == nil {
			t.Fatalf("%s: %d, no page", path, p.status)
		}
		p.doc.Find("a[href]").Each(func(_ int, a *goquery.Selection) {
			href, _ := a.Attr("href")
			if href == "/" || strings.HasPrefix(href, "/login") || strings.HasPrefix(href, "/incidents") {
				t.Errorf("%s (%d): a link to %s (%q)", path, p.status, href, strings.TrimSpace(a.Text()))
			}
		})
		if p.status >= 400 && p.doc.Find(`a[href="`+share+`"]`).Length() == 0 {
			t.Errorf("%s (%d): no way back to the shared incident", path, p.status)
		}
	}
}
