package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/webhook"
	"github.com/waterline-dev/waterline/wire"
)

func TestWebhooksAdminAPI(t *testing.T) {
	e := newAPIEnv(t)
	body := []byte(`{"url":"https://jira.example.com/rest/api/3/issue/OPS-1/remotelink","secret":"0123456789abcdef0123","format":"jira"}`)
	for _, tc := range []struct {
		token string
		want  int
	}{{"", 401}, {e.read, 403}, {e.write, 403}} {
		if r := e.do(request{method: "POST", path: "/api/v1/webhooks", token: tc.token, ctype: "application/json", body: body}); r.status != tc.want {
			t.Errorf("POST with token %q: %d, want %d", tc.token, r.status, tc.want)
		}
		if r := e.do(request{method: "GET", path: "/api/v1/webhooks", token: tc.token}); r.status != tc.want {
			t.Errorf("GET with token %q: %d, want %d", tc.token, r.status, tc.want)
		}
	}

	for _, tc := range []struct {
		body, field string
		status      int
	}{
		{``, "", 400},
		{`{"url":`, "", 400},
		{`{"secret":"0123456789abcdef"}`, "url", 422},
		{`{"url":"ftp://x/y","secret":"0123456789abcdef"}`, "url", 422},
		{`{"url":"/relative","secret":"0123456789abcdef"}`, "url", 422},
		{`{"url":"https://x.example/hook","secret":"short"}`, "secret", 422},
		{`{"url":"https://x.example/hook","secret":"0123456789abcdef","format":"teams"}`, "format", 422},
		{`{"url":"https://x.example/hook","secret":"0123456789abcdef","events":["incident.opened","incident.exploded"]}`, "events[1]", 422},
		{`{"url":"https://x.example/hook","secret":"0123456789abcdef","colour":"red"}`, "colour", 422},
	} {
		r := e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json", body: []byte(tc.body)})
		if r.status != tc.status || r.err.Field != tc.field || r.err.Error == "" {
			t.Errorf("POST %s: %d %+v, want %d on field %q", tc.body, r.status, r.err, tc.status, tc.field)
		}
	}

	r := e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json",
		body: []byte(`{"url":"https://bot:api-token@snow.example.com/api/global/em/jsonv2","secret":"0123456789abcdef"}`)})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "0123456789abcdef") || strings.Contains(string(r.body), "api-token") {
		t.Fatalf("the answer shows a secret: %s", r.body)
	}
	var created wire.Webhook
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	if created.URL != "https://bot:xxxxx@snow.example.com/api/global/em/jsonv2" || created.Format != "waterline" ||
		!slices.Equal(created.Events, store.WebhookEvents) {
		t.Fatalf("defaults or masking: %+v", created)
	}
	// The stored URL keeps the credentials: the sender needs them.
	if n := e.count(`SELECT count(*) FROM webhooks WHERE url LIKE '%api-token%'`); n != 1 {
		t.Fatalf("stored URL lost its credentials")
	}

	var list wire.WebhookList
	lr := e.do(request{method: "GET", path: "/api/v1/webhooks", token: e.admin})
	if err := json.Unmarshal(lr.body, &list); err != nil || len(list.Webhooks) != 1 || list.Webhooks[0].ID != created.ID {
		t.Fatalf("list: %s", lr.body)
	}
	path := fmt.Sprintf("/api/v1/webhooks/%d", created.ID)
	if r := e.do(request{method: "GET", path: path + "/deliveries", token: e.admin}); r.status != 200 || string(r.body) != `{"deliveries":[]}`+"\n" {
		t.Fatalf("empty log: %d %q", r.status, r.body)
	}
	if r := e.do(request{method: "GET", path: path + "/deliveries?limit=0", token: e.admin}); r.status != 400 || r.err.Field != "limit" {
		t.Fatalf("bad limit: %d %+v", r.status, r.err)
	}
	if r := e.do(request{method: "GET", path: path + "/deliveries?cursor=abc", token: e.admin}); r.status != 400 || r.err.Field != "cursor" {
		t.Fatalf("bad cursor: %d %+v", r.status, r.err)
	}
	if r := e.do(request{method: "DELETE", path: path, token: e.write}); r.status != 403 {
		t.Fatalf("delete with a write token: %d", r.status)
	}
	if r := e.do(request{method: "DELETE", path: path, token: e.admin}); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for _, p := range []string{path, path + "/deliveries"} {
		method := "DELETE"
		if strings.HasSuffix(p, "deliveries") {
			method = "GET"
		}
		if r := e.do(request{method: method, path: p, token: e.admin}); r.status != 404 {
			t.Fatalf("%s %s after delete: %d", method, p, r.status)
		}
	}
}

// hookReceiver records deliveries by path, checking each signature with
// the secret of the webhook behind that path.
type hookReceiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secrets map[string]string
	got     map[string][]delivered
}

type delivered struct {
	event, key string
	body       map[string]any
	raw        []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{t: t, secrets: map[string]string{}, got: map[string][]delivered{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := webhook.Verify(h.secrets[r.URL.Path], r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), raw, time.Now()); err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("%s: body is not a JSON object: %s", r.URL.Path, raw)
		}
		h.got[r.URL.Path] = append(h.got[r.URL.Path], delivered{event: r.Header.Get(webhook.HeaderEvent),
			key: r.Header.Get(webhook.HeaderIdempotencyKey), body: body, raw: raw})
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// register adds a webhook through the API and returns its id.
func (h *hookReceiver) register(e *apiEnv, path, format string, events ...string) int64 {
	h.t.Helper()
	secret := "secret-for-" + strings.Trim(path, "/") + "-0123456789"
	h.mu.Lock()
	h.secrets[path] = secret
	h.mu.Unlock()
	b, _ := json.Marshal(wire.WebhookCreate{URL: h.srv.URL + path, Secret: secret, Format: format, Events: events})
	r := e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json", body: b})
	if r.status != http.StatusCreated {
		h.t.Fatalf("register %s: %d %s", path, r.status, r.body)
	}
	var v wire.Webhook
	_ = json.Unmarshal(r.body, &v)
	return v.ID
}

func (h *hookReceiver) deliveries(path string) []delivered {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]delivered(nil), h.got[path]...)
}

func events(ds []delivered) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.event)
	}
	return out
}

// TestWebhookEventsAndFormats drives the notifier the way serve wires it
// (incident changes from the API, analyses from the analyzer's OnReady)
// and a real dispatcher, and checks what each format's receiver gets.
func TestWebhookEventsAndFormats(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	rc := newHookReceiver(t)
	waterlineID := rc.register(e, "/waterline", "waterline")
	rc.register(e, "/jira", "jira")
	rc.register(e, "/snow", "servicenow")
	rc.register(e, "/slack", "slack")
	rc.register(e, "/resolved-only", "waterline", "incident.resolved")
	notifier := webhook.NewNotifier(e.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	dispatcher := webhook.NewDispatcher(e.st, webhook.Options{AllowPrivate: true})
	notifyChanged := func() {
		for _, id := range e.incidentChanges() {
			if err := notifier.NotifyIncident(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	analysis := func(id int64, top string) {
		t.Helper()
		prevTop := ""
		if rec, err := e.st.LatestReadyAnalysis(ctx, id); err == nil {
			var r struct{ Causes []struct{ Category string } }
			_ = json.Unmarshal(rec.Result, &r)
			prevTop = r.Causes[0].Category
		}
		v, err := e.st.StartAnalysis(ctx, id, "digest-"+top)
		if err != nil {
			t.Fatal(err)
		}
		result := fmt.Sprintf(`{"causes":[{"category":%q,"score":0.8,"summary":"%s fits best"}]}`, top, top)
		if err := e.st.FinishAnalysis(ctx, id, v, []byte(result), ""); err != nil {
			t.Fatal(err)
		}
		if err := notifier.NotifyAnalysis(ctx, id, v, prevTop, top); err != nil {
			t.Fatal(err)
		}
	}
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

	r := e.post("/api/v1/incidents", "application/json",
		[]byte(fmt.Sprintf(`{"title":"p99 up on chat-7b","start":%q,"scope":{"model":"chat-7b","node":"gpu-3"}}`, testNow.Add(-2*time.Hour).Format(time.RFC3339))))
	var inc struct{ ID int64 }
	if r.status != 201 || json.Unmarshal(r.body, &inc) != nil {
		t.Fatalf("create incident: %d %s", r.status, r.body)
	}
	notifyChanged()
	notifyChanged() // told twice: still one delivery each
	analysis(inc.ID, "release")
	analysis(inc.ID, "release")  // same top cause: not news
	analysis(inc.ID, "capacity") // changed
	if r := e.post(fmt.Sprintf("/api/v1/incidents/%d/resolve", inc.ID), "", nil); r.status != 200 {
		t.Fatalf("resolve: %d", r.status)
	}
	notifyChanged()
	drain()

	// A webhook registered now hears nothing of what already happened.
	rc.register(e, "/late", "waterline")
	notifyChanged()
	analysis(inc.ID, "release")
	drain()

	want := []string{"incident.opened", "analysis.ready", "cause.changed", "incident.resolved", "cause.changed"}
	for _, p := range []string{"/waterline", "/jira", "/snow", "/slack"} {
		if got := events(rc.deliveries(p)); !slices.Equal(got, want) {
			t.Errorf("%s got %v, want %v", p, got, want)
		}
	}
	if got := events(rc.deliveries("/resolved-only")); !slices.Equal(got, []string{"incident.resolved"}) {
		t.Errorf("/resolved-only got %v", got)
	}
	if got := events(rc.deliveries("/late")); !slices.Equal(got, []string{"cause.changed"}) {
		t.Errorf("/late got %v, want only the change after it was registered", got)
	}

	// Waterline format: GET /api/v1/incidents/{id}, field for field, plus
	// the event.
	var api map[string]any
	e.get(fmt.Sprintf("/api/v1/incidents/%d", inc.ID), &api)
	wl := rc.deliveries("/waterline")
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		sort.Strings(k)
		return k
	}
	wantKeys := append(keys(api), "event", "occurred_at")
	sort.Strings(wantKeys)
	if got := keys(wl[0].body); !slices.Equal(got, wantKeys) {
		t.Errorf("waterline opened body keys %v, want the API's %v", got, wantKeys)
	}
	if wl[3].body["status"] != "resolved" || wl[3].body["url"] != api["url"] || wl[3].body["id"] != api["id"] {
		t.Errorf("resolved body %s", wl[3].raw)
	}
	if wl[1].body["analysis_version"] != 1.0 || wl[1].body["top_cause"].(map[string]any)["category"] != "release" {
		t.Errorf("analysis.ready body %s", wl[1].raw)
	}
	if wl[2].body["previous_top_cause"] != "release" || wl[2].body["top_cause"].(map[string]any)["category"] != "capacity" {
		t.Errorf("cause.changed body %s", wl[2].raw)
	}
	for i, d := range wl {
		if i > 0 && d.key == wl[i-1].key {
			t.Errorf("two events share the idempotency key %s", d.key)
		}
	}
	if wl[1].key != fmt.Sprintf("waterline.test/incidents/%d/analysis.ready/1", inc.ID) {
		t.Errorf("idempotency key %q", wl[1].key)
	}

	// Jira remote link.
	jira := rc.deliveries("/jira")
	for i, d := range jira {
		obj := d.body["object"].(map[string]any)
		if d.body["globalId"] != fmt.Sprintf("system=waterline.test&incident=%d", inc.ID) || obj["url"] != api["url"] ||
			!strings.Contains(obj["title"].(string), "p99 up on chat-7b") ||
			obj["icon"].(map[string]any)["url16x16"] == "" {
			t.Errorf("jira %s: %s", d.event, d.raw)
		}
		resolved := obj["status"].(map[string]any)["resolved"]
		if resolved != (i >= 3) {
			t.Errorf("jira %s: status.resolved = %v", d.event, resolved)
		}
	}

	// The icon the links point at exists.
	iconURL := jira[0].body["object"].(map[string]any)["icon"].(map[string]any)["url16x16"].(string)
	res, err := http.Get(e.srv.URL + strings.TrimPrefix(iconURL, "http://waterline.test"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/png" {
		t.Errorf("jira icon %s: %d %s", iconURL, res.StatusCode, res.Header.Get("Content-Type"))
	}

	// Slack message: a notification line, the incident linked, what
	// happened and the top cause.
	for i, d := range rc.deliveries("/slack") {
		text, _ := d.body["text"].(string)
		blocks, _ := d.body["blocks"].([]any)
		if !strings.Contains(text, fmt.Sprintf("Waterline #%d", inc.ID)) || len(blocks) != 2 {
			t.Errorf("slack %s: %s", d.event, d.raw)
			continue
		}
		section := blocks[0].(map[string]any)["text"].(map[string]any)["text"].(string)
		if !strings.Contains(section, "<"+api["url"].(string)+"|") {
			t.Errorf("slack %s: the incident is not linked: %s", d.event, section)
		}
		want := []string{"opened", "analysed", "top cause changed (was release)", "resolved", "top cause changed (was capacity)"}[i]
		if !strings.Contains(section, want) || i > 0 && !strings.Contains(section, "fits best") {
			t.Errorf("slack %s: %q, want %q and the top cause", d.event, section, want)
		}
	}

	// ServiceNow Event Management record.
	snow := rc.deliveries("/snow")
	timeOfEvent := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`)
	for i, d := range snow {
		recs := d.body["records"].([]any)
		rec := recs[0].(map[string]any)
		var info map[string]any
		if len(recs) != 1 || rec["message_key"] != fmt.Sprintf("waterline@waterline.test/incidents/%d", inc.ID) || rec["node"] != "gpu-3" || rec["resource"] != "chat-7b" ||
			rec["source"] != "Waterline" || rec["metric_name"] != "p99_latency" ||
			!timeOfEvent.MatchString(rec["time_of_event"].(string)) ||
			json.Unmarshal([]byte(rec["additional_info"].(string)), &info) != nil || info["event"] != d.event {
			t.Errorf("servicenow %s: %s", d.event, d.raw)
		}
		wantSev, wantState := "2", "New"
		if i >= 3 {
			wantSev, wantState = "0", "Closing"
		}
		if rec["severity"] != wantSev || rec["resolution_state"] != wantState {
			t.Errorf("servicenow %s: severity %v state %v, want %s %s", d.event, rec["severity"], rec["resolution_state"], wantSev, wantState)
		}
	}

	// The delivery log shows what was sent, newest first.
	var log wire.DeliveryPage
	lr := e.do(request{method: "GET", path: fmt.Sprintf("/api/v1/webhooks/%d/deliveries?limit=4", waterlineID), token: e.admin})
	if err := json.Unmarshal(lr.body, &log); err != nil || len(log.Deliveries) != 4 || log.NextCursor == "" {
		t.Fatalf("log page: %d %s", lr.status, lr.body)
	}
	if d := log.Deliveries[0]; d.Event != "cause.changed" || d.Status != "delivered" || d.Attempts != 1 || string(d.Payload) != string(wl[4].raw) {
		t.Errorf("newest log entry %+v", d)
	}
	lr = e.do(request{method: "GET", path: fmt.Sprintf("/api/v1/webhooks/%d/deliveries?cursor=%s", waterlineID, log.NextCursor), token: e.admin})
	log.Deliveries, log.NextCursor = nil, ""
	if err := json.Unmarshal(lr.body, &log); err != nil || len(log.Deliveries) != 1 || log.Deliveries[0].Event != "incident.opened" || log.NextCursor != "" {
		t.Fatalf("second log page: %s", lr.body)
	}
}

// A registration retried after its answer was lost (a Terraform apply, a
// script) made a second webhook, and every event was delivered twice.
// The same registration again answers 200 with the webhook it made; the
// same URL and format with another secret or other events is a 409
// naming the existing one, which the caller deletes or keeps.
func TestWebhookRegistrationIsIdempotent(t *testing.T) {
	e := newAPIEnv(t)
	reg := func(body string) response {
		return e.do(request{method: "POST", path: "/api/v1/webhooks", token: e.admin, ctype: "application/json", body: []byte(body)})
	}
	body := `{"url":"https://hooks.example.com/in","secret":"0123456789abcdef0123","format":"jira"}`
	first := reg(body)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := reg(body)
	var a, b wire.Webhook
	_ = json.Unmarshal(first.body, &a)
	_ = json.Unmarshal(again.body, &b)
	if again.status != http.StatusOK || b.ID != a.ID {
		t.Fatalf("retry: %d %s, want 200 with webhook %d", again.status, again.body, a.ID)
	}
	other := reg(`{"url":"https://hooks.example.com/in","secret":"another-secret-0123456","format":"jira"}`)
	if other.status != http.StatusConflict || !strings.Contains(other.err.Error, strconv.FormatInt(a.ID, 10)) {
		t.Fatalf("another secret: %d %s", other.status, other.body)
	}
	if r := reg(`{"url":"https://hooks.example.com/in","secret":"0123456789abcdef0123","format":"servicenow"}`); r.status != http.StatusCreated {
		t.Fatalf("another format to the same URL: %d %s", r.status, r.body)
	}
	if n := e.count("SELECT count(*) FROM webhooks"); n != 2 {
		t.Fatalf("%d webhooks stored, want 2", n)
	}
}

// A paused receiver (no answer, slow error answers, 429, Retry-After) has
// its deliveries held, and the webhook API did not say so: an operator saw
// pending deliveries and no reason. GET /api/v1/webhooks shows
// paused_until while the pause lasts.
func TestWebhookAPIShowsAPause(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := context.Background()
	hook, err := e.st.CreateWebhook(ctx, store.NewWebhook{URL: "https://hooks.slack.com/services/T0/B0/x", Secret: "0123456789abcdef", Format: "slack",
		Events: []string{store.EventIncidentOpened}})
	if err != nil {
		t.Fatal(err)
	}
	list := func() wire.Webhook {
		var l wire.WebhookList
		if r := e.do(request{method: "GET", path: "/api/v1/webhooks", token: e.admin}); r.status != 200 || json.Unmarshal(r.body, &l) != nil || len(l.Webhooks) != 1 {
			t.Fatalf("GET webhooks: %d %s", r.status, r.body)
		}
		return l.Webhooks[0]
	}
	if w := list(); w.PausedUntil != nil {
		t.Fatalf("a webhook never paused shows paused_until %v", w.PausedUntil)
	}
	until := testNow.Add(time.Minute).Truncate(time.Second)
	if err := e.st.PauseWebhook(ctx, hook.ID, until); err != nil {
		t.Fatal(err)
	}
	if w := list(); w.PausedUntil == nil || !w.PausedUntil.Equal(until) {
		t.Fatalf("paused until %s: paused_until %v", until, w.PausedUntil)
	}
	if err := e.st.PauseWebhook(ctx, hook.ID, testNow.Add(-time.Hour)); err != nil { // a pause only lengthens
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE webhooks SET paused_until = $1`, testNow.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if w := list(); w.PausedUntil != nil {
		t.Fatalf("a pause that ended shows paused_until %v", w.PausedUntil)
	}
}
