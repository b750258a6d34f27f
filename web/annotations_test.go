package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/wire"
)

// A CD tool posts Grafana's annotation body to Waterline as it would to
// Grafana: it gets Grafana's answer, the event lands with its kind and
// scope from the tags, and a retry stores nothing new.
func TestGrafanaAnnotationBecomesAnEvent(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	at := testNow.Add(-20 * time.Minute)
	body := fmt.Sprintf(`{"dashboardUID":"abc123","panelId":2,"time":%d,"timeEnd":%d,
		"tags":["deploy","model:rerank-base","version:v3.2.0","source:github-actions","env:prod"],
		"text":"Deployed rerank-base v3.2.0 (a1b2c3d)"}`, at.UnixMilli(), at.Add(3*time.Minute).UnixMilli())
	var first, again wire.AnnotationResult
	for i, dst := range []*wire.AnnotationResult{&first, &again} {
		r := e.post("/api/annotations", "application/json", []byte(body))
		if r.status != http.StatusOK {
			t.Fatalf("post %d: %d %s", i, r.status, r.body)
		}
		if err := json.Unmarshal(r.body, dst); err != nil {
			t.Fatal(err)
		}
	}
	if first.Message != "Annotation added" || first.ID <= 0 || first.ID != again.ID {
		t.Errorf("answers %+v and %+v: want Grafana's, the same id twice", first, again)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
	// Without a kind tag it is an annotation; a scope tag it has.
	r := e.post("/api/annotations", "application/json", []byte(fmt.Sprintf(
		`{"time":%d,"tags":["model:rerank-base","replica:rerank-base-1"],"text":"cleared a cache"}`, at.Add(time.Minute).UnixMilli())))
	if r.status != http.StatusOK {
		t.Fatalf("plain annotation: %d %s", r.status, r.body)
	}
	_, tl := e.timeline(url.Values{"from": {at.Add(-time.Hour).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}})
	kinds := map[string]wire.Event{}
	for _, ev := range tl.Events {
		kinds[string(ev.Kind)] = ev
	}
	d, ok := kinds["deploy"]
	if !ok || d.Model != "rerank-base" || d.Version != "v3.2.0" || d.Source != "github-actions" || !d.Time.Equal(at) ||
		d.EndTime == nil || !d.EndTime.Equal(at.Add(3*time.Minute)) || d.Summary != "Deployed rerank-base v3.2.0 (a1b2c3d)" {
		t.Errorf("deploy event %+v", d)
	}
	if a, ok := kinds["annotation"]; !ok || a.Replica != "rerank-base-1" || a.Source != "annotation" {
		t.Errorf("annotation event %+v (all: %v)", a, kinds)
	}
	for _, tc := range []struct {
		token, body string
		status      int
		field       string
	}{
		{e.read, `{"text":"x"}`, http.StatusForbidden, ""},
		{e.write, `{"time":"yesterday","text":"x"}`, http.StatusUnprocessableEntity, "time"},
		{e.write, `{"text":"x","tags":["kind:explosion"]}`, http.StatusUnprocessableEntity, "tags[0]"},
		{e.write, `{"text":"x","tags":["model:a","model:b"]}`, http.StatusUnprocessableEntity, "tags[1]"},
		{e.write, fmt.Sprintf(`{"text":"x","time":%d}`, testNow.Add(48*time.Hour).UnixMilli()), http.StatusUnprocessableEntity, "time"},
		{e.write, `{"text":`, http.StatusBadRequest, ""},
		// Text is required, as in Grafana (and the OpenAPI document): a
		// CD step whose template left the body empty stored an event
		// that says nothing.
		{e.write, `{}`, http.StatusUnprocessableEntity, "text"},
		{e.write, `null`, http.StatusUnprocessableEntity, "text"},
		{e.write, `{"text":"","tags":["deploy","model:a"]}`, http.StatusUnprocessableEntity, "text"},
	} {
		r := e.do(request{method: "POST", path: "/api/annotations", token: tc.token, ctype: "application/json", body: []byte(tc.body)})
		if r.status != tc.status || r.err.Field != tc.field {
			t.Errorf("%s: %d field %q (%s), want %d field %q", tc.body, r.status, r.err.Field, r.body, tc.status, tc.field)
		}
	}
	if n := e.count(`SELECT count(*) FROM events WHERE summary = ''`); n != 0 {
		t.Errorf("%d annotations without text stored", n)
	}
}

// What Grafana accepts, Waterline accepts the same way: a JSON body sent
// without a JSON Content-Type (curl -d), time 0 as now, a reversed region
// swapped; and an Idempotency-Key makes an annotation without a time
// exactly one event per key, not one per minute.
func TestGrafanaAnnotationLeniencyAndIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	at := testNow.Add(-20 * time.Minute)
	for _, tc := range []struct{ ctype, body string }{
		{"application/x-www-form-urlencoded", `{"text":"curl -d","tags":["deploy","model:a"]}`},
		{"application/json", `{"time":0,"text":"epoch zero","tags":["model:b"]}`},
		{"application/json", fmt.Sprintf(`{"time":%d,"timeEnd":%d,"text":"reversed","tags":["model:c"]}`, at.Add(2*time.Minute).UnixMilli(), at.UnixMilli())},
	} {
		if r := e.do(request{method: "POST", path: "/api/annotations", token: e.write, ctype: tc.ctype, body: []byte(tc.body)}); r.status != http.StatusOK {
			t.Errorf("%s %s: %d %s", tc.ctype, tc.body, r.status, r.body)
		}
	}
	_, tl := e.timeline(url.Values{"from": {at.Add(-time.Hour).Format(time.RFC3339)}, "to": {testNow.Add(time.Minute).Format(time.RFC3339)}})
	byModel := map[string]wire.Event{}
	for _, ev := range tl.Events {
		byModel[ev.Model] = ev
	}
	if ev, ok := byModel["b"]; !ok || !ev.Time.Equal(testNow.Truncate(time.Millisecond)) {
		t.Errorf("time 0: %+v, want now", ev)
	}
	if ev, ok := byModel["c"]; !ok || !ev.Time.Equal(at) || ev.EndTime == nil || !ev.EndTime.Equal(at.Add(2*time.Minute)) {
		t.Errorf("reversed region: %+v, want %v to %v", ev, at, at.Add(2*time.Minute))
	}
	// Two annotations saying the same thing in the same minute, each with
	// its own key, are two; a retry of one (same key) is not a third.
	before := e.count(`SELECT count(*) FROM events`)
	for _, key := range []string{"run-1", "run-2", "run-1"} {
		r := e.do(request{method: "POST", path: "/api/annotations", token: e.write, ctype: "application/json",
			body: []byte(`{"text":"restarted workers","tags":["model:d"]}`), header: http.Header{"Idempotency-Key": {key}}})
		if r.status != http.StatusOK {
			t.Fatalf("key %s: %d %s", key, r.status, r.body)
		}
	}
	if n := e.count(`SELECT count(*) FROM events`) - before; n != 2 {
		t.Errorf("%d events from two keys (one retried), want 2", n)
	}
	// A key reused for another annotation is the client's mistake, said
	// as such (as POST /api/v1/incidents does), not a second event.
	r := e.do(request{method: "POST", path: "/api/annotations", token: e.write, ctype: "application/json",
		body: []byte(`{"text":"something else","tags":["model:d"]}`), header: http.Header{"Idempotency-Key": {"run-1"}}})
	if r.status != http.StatusUnprocessableEntity || r.err.Field != "Idempotency-Key" {
		t.Errorf("key reused for another annotation: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM events`) - before; n != 2 {
		t.Errorf("%d events after a reused key, want 2", n)
	}
	// With explicit times, the times are part of what a key names: the
	// same text an hour earlier under the same key was answered 200 and
	// dropped. The exact retry is still one event.
	timed := func(ms int64) response {
		return e.do(request{method: "POST", path: "/api/annotations", token: e.write, ctype: "application/json",
			body: []byte(fmt.Sprintf(`{"time":%d,"text":"k","tags":["model:d"]}`, ms)), header: http.Header{"Idempotency-Key": {"run-t"}}})
	}
	t1 := testNow.Add(-time.Hour).UnixMilli()
	for _, ms := range []int64{t1, t1} {
		if r := timed(ms); r.status != http.StatusOK {
			t.Fatalf("timed annotation: %d %s", r.status, r.body)
		}
	}
	if r := timed(t1 - 3600_000); r.status != http.StatusUnprocessableEntity || r.err.Field != "Idempotency-Key" {
		t.Errorf("key reused for another time: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM events`) - before; n != 3 {
		t.Errorf("%d events after the timed ones, want 3", n)
	}
}

// A region and its reversed retry are one event with one id.
func TestGrafanaAnnotationReversedRegionIsTheSameEvent(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	a, b := testNow.Add(-20*time.Minute).UnixMilli(), testNow.Add(-17*time.Minute).UnixMilli()
	var ids []int64
	for _, body := range []string{
		fmt.Sprintf(`{"time":%d,"timeEnd":%d,"text":"canary","tags":["deploy","model:m"]}`, a, b),
		fmt.Sprintf(`{"time":%d,"timeEnd":%d,"text":"canary","tags":["deploy","model:m"]}`, b, a),
	} {
		r := e.post("/api/annotations", "application/json", []byte(body))
		var res wire.AnnotationResult
		if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
		ids = append(ids, res.ID)
	}
	if ids[0] != ids[1] {
		t.Errorf("ids %v: a region and its reversed retry differ", ids)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

// With no age limit (backfills), an annotation still cannot be dated
// before 1970, as events cannot: a far-past time was a 500, a nearer one
// an event the events API would refuse.
func TestGrafanaAnnotationBefore1970(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, func(c *web.Config) { c.IngestMaxAge = 0 })
	for _, ms := range []int64{-9000000000000000, -86400000} {
		body := fmt.Sprintf(`{"time":%d,"text":"x","tags":["deploy"]}`, ms)
		r := e.do(request{method: "POST", path: "/api/annotations", token: e.write, ctype: "application/json", body: []byte(body)})
		if r.status != http.StatusUnprocessableEntity || r.err.Field != "time" {
			t.Errorf("time %d: %d %s, want 422 naming time", ms, r.status, r.body)
		}
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d events stored", n)
	}
}

// A CD step annotates a deploy's start, then sets its end when the
// rollout finishes (PATCH /api/annotations/{id}, as against Grafana),
// corrects it (PUT) or withdraws it (DELETE): the same event changes,
// under the same id. Those calls answered 404/405, failing the step.
func TestGrafanaAnnotationPatchedReplacedDeleted(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	at := testNow.Add(-20 * time.Minute)
	r := e.post("/api/annotations", "application/json", []byte(fmt.Sprintf(
		`{"time":%d,"tags":["deploy","model:rerank-base","version:v3.2.0"],"text":"deploying rerank-base v3.2.0"}`, at.UnixMilli())))
	var added wire.AnnotationResult
	if r.status != http.StatusOK || json.Unmarshal(r.body, &added) != nil {
		t.Fatalf("post: %d %s", r.status, r.body)
	}
	path := fmt.Sprintf("/api/annotations/%d", added.ID)
	send := func(method, body string) response {
		t.Helper()
		return e.do(request{method: method, path: path, token: e.write, ctype: "application/json", body: []byte(body)})
	}
	stored := func() (id, kind, model, version, summary string, end *time.Time) {
		t.Helper()
		if err := e.pool.QueryRow(t.Context(), `SELECT id, kind, model, version, summary, end_time FROM events`).Scan(&id, &kind, &model, &version, &summary, &end); err != nil {
			t.Fatal(err)
		}
		return
	}
	id0, _, _, _, _, _ := stored()

	// The rollout ends: only timeEnd changes.
	if r := send("PATCH", fmt.Sprintf(`{"timeEnd":%d}`, at.Add(4*time.Minute).UnixMilli())); r.status != http.StatusOK || !strings.Contains(string(r.body), `"Annotation patched"`) {
		t.Fatalf("PATCH timeEnd: %d %s", r.status, r.body)
	}
	id, kind, model, version, summary, end := stored()
	if id != id0 || kind != "deploy" || model != "rerank-base" || version != "v3.2.0" || summary != "deploying rerank-base v3.2.0" ||
		end == nil || !end.Equal(at.Add(4*time.Minute)) {
		t.Errorf("after PATCH: %s %s %s %s %q end %v; want the same event ending 4 min after its start", id, kind, model, version, summary, end)
	}
	// A bad field changes nothing.
	if r := send("PATCH", fmt.Sprintf(`{"timeEnd":%d,"text":"x"}`, testNow.Add(48*time.Hour).UnixMilli())); r.status != http.StatusUnprocessableEntity || r.err.Field != "timeEnd" {
		t.Errorf("PATCH a timeEnd in two days: %d field %q, want 422 timeEnd", r.status, r.err.Field)
	}
	if _, _, _, _, s, _ := stored(); s != "deploying rerank-base v3.2.0" {
		t.Errorf("a refused PATCH changed the text to %q", s)
	}
	// New tags are a new scope and kind.
	if r := send("PATCH", `{"text":"rolled back","tags":["rollback","model:rerank-base","version:v3.1.9"]}`); r.status != http.StatusOK {
		t.Fatalf("PATCH tags: %d %s", r.status, r.body)
	}
	if _, kind, _, version, summary, _ := stored(); kind != "rollback" || version != "v3.1.9" || summary != "rolled back" {
		t.Errorf("after PATCH of tags: %s %s %q", kind, version, summary)
	}
	// PUT replaces all of it: no timeEnd, no end.
	if r := send("PUT", fmt.Sprintf(`{"time":%d,"tags":["config_change"],"text":"raised max batch size"}`, at.UnixMilli())); r.status != http.StatusOK || !strings.Contains(string(r.body), `"Annotation updated"`) {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if id, kind, model, _, summary, end := stored(); id != id0 || kind != "config_change" || model != "" || summary != "raised max batch size" || end != nil {
		t.Errorf("after PUT: %s %s model %q %q end %v", id, kind, model, summary, end)
	}
	if r := e.do(request{method: "DELETE", path: path, token: e.read}); r.status != http.StatusForbidden {
		t.Errorf("DELETE with a read token: %d, want 403", r.status)
	}
	if r := send("DELETE", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"Annotation deleted"`) {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d events after DELETE", n)
	}
	for _, p := range []string{path, "/api/annotations/12", "/api/annotations/abc"} {
		if r := e.do(request{method: "PATCH", path: p, token: e.write, ctype: "application/json", body: []byte(`{"text":"x"}`)}); r.status != http.StatusNotFound {
			t.Errorf("PATCH %s: %d, want 404", p, r.status)
		}
	}
}

// A shell step's `date +%s` is seconds, not Grafana's milliseconds: the
// annotation reads as early 1970 and is refused, and the answer now says
// what was most likely wrong.
func TestAnnotationInSecondsSaysSo(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	r := e.post("/api/annotations", "application/json", []byte(fmt.Sprintf(`{"time":%d,"text":"deploy"}`, testNow.Unix())))
	if r.status != http.StatusUnprocessableEntity || r.err.Field != "time" || !strings.Contains(r.err.Error, "Unix milliseconds") ||
		!strings.Contains(r.err.Error, testNow.UTC().Format("2006-01-02T15:04")) {
		t.Errorf("time in seconds: %d field %q %q; want 422 on time saying it looks like seconds, and the date it would be", r.status, r.err.Field, r.err.Error)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d events stored", n)
	}
}
