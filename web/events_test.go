package web_test

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

func TestEventsIngest(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	t0 := testNow.Add(-time.Hour).Format(time.RFC3339)
	t1 := testNow.Add(-50 * time.Minute).Format(time.RFC3339)
	body := fmt.Sprintf(`{"id":"argo-1","kind":"deploy","time":%q,"model":"vision-xl","version":"v2","source":"argo-cd","summary":"rollout v1 -> v2","attrs":{"commit":"abc","replicas":[1,2]}}
{"kind":"config_change","time":%q,"end_time":%q,"summary":"batch window 5ms -> 20ms"}
`, t0, t0, t1)
	if a, d := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(body))); a != 2 || d != 0 {
		t.Fatalf("accepted %d duplicates %d", a, d)
	}
	// The retry is all duplicates: by id, and by content hash for the
	// event without one.
	if a, d := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(body))); a != 0 || d != 2 {
		t.Fatalf("retry: accepted %d duplicates %d, want 0 2", a, d)
	}
	got, err := e.st.Events(context.Background(), store.EventFilter{From: testNow.Add(-2 * time.Hour), To: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d events stored, want 2", len(got))
	}
	var deploy, cfg correlate.Event
	for _, ev := range got {
		if ev.Kind == correlate.KindDeploy {
			deploy = ev
		} else {
			cfg = ev
		}
	}
	if deploy.ID != "argo-1" || deploy.Model != "vision-xl" || deploy.Version != "v2" || deploy.Source != "argo-cd" ||
		deploy.Attrs["commit"] != "abc" {
		t.Fatalf("deploy = %+v", deploy)
	}
	if cfg.ID == "" || cfg.EndTime == nil || !cfg.EndTime.Equal(testNow.Add(-50*time.Minute)) {
		t.Fatalf("config change = %+v", cfg)
	}
	// A pretty-printed object (as jq prints one) is one record, not a
	// "truncated" first line; so are several one after another.
	pretty := fmt.Sprintf("{\n  \"kind\": \"rollback\",\n  \"time\": %q,\n  \"attrs\": {\n    \"to\": \"v1\"\n  }\n}\n", t0)
	if a, _ := accepted(t, e.post("/api/v1/events", "application/json", []byte(pretty))); a != 1 {
		t.Fatalf("pretty-printed object: accepted %d", a)
	}
	two := strings.ReplaceAll(pretty, "rollback", "route_change") + strings.ReplaceAll(pretty, "rollback", "scale_down")
	if a, _ := accepted(t, e.post("/api/v1/events", "application/json", []byte(two))); a != 2 {
		t.Fatalf("two pretty-printed objects: accepted %d", a)
	}
	stray := strings.ReplaceAll(pretty, "rollback", "scale_up") + "}\n"
	if r := e.post("/api/v1/events", "application/json", []byte(stray)); r.status != http.StatusBadRequest || r.err.Line != 2 {
		t.Fatalf("a stray brace after the object: %d line %d (%s)", r.status, r.err.Line, r.err.Error)
	}
	if r := e.post("/api/v1/events", "application/json", []byte(strings.ReplaceAll(pretty, "rollback", "scale_up")[:40])); r.status != http.StatusBadRequest || r.err.Line != 1 {
		t.Fatalf("a truncated pretty-printed object: %d line %d (%s)", r.status, r.err.Line, r.err.Error)
	}
	// A JSON array works the same.
	arr := fmt.Sprintf(`[{"kind":"scale_up","time":%q,"model":"m"},{"kind":"custom","time":%q}]`, t0, t1)
	if a, _ := accepted(t, e.post("/api/v1/events", "application/json", []byte(arr))); a != 2 {
		t.Fatalf("array: accepted %d", a)
	}
}

func TestEventsBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ok := fmt.Sprintf(`{"kind":"deploy","time":%q,"model":"m"}`, testNow.Add(-time.Hour).Format(time.RFC3339))
	withLine2 := func(l string) []byte { return []byte(ok + "\n" + l + "\n" + ok + "\n") }
	tm := testNow.Add(-time.Hour).Format(time.RFC3339)
	cases := []struct {
		name   string
		body   []byte
		status int
		field  string
	}{
		{"unknown kind", withLine2(fmt.Sprintf(`{"kind":"reboot","time":%q}`, tm)), 422, "kind"},
		{"missing kind", withLine2(fmt.Sprintf(`{"time":%q}`, tm)), 422, "kind"},
		{"missing time", withLine2(`{"kind":"deploy"}`), 422, "time"},
		{"far past", withLine2(`{"kind":"deploy","time":"2001-01-01T00:00:00Z"}`), 422, "time"},
		{"far future", withLine2(`{"kind":"deploy","time":"2099-01-01T00:00:00Z"}`), 422, "time"},
		{"end before start", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"end_time":%q}`, tm, testNow.Add(-2*time.Hour).Format(time.RFC3339))), 422, "end_time"},
		{"attrs not an object", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"attrs":[1]}`, tm)), 422, "attrs"},
		{"NUL in attrs", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"attrs":{"a":"x\u0000"}}`, tm)), 422, "attrs.a"},
		// Valid JSON beyond Postgres' numeric: a 500 for the whole batch.
		{"huge number in attrs", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"attrs":{"b":1,"x":{"y":[1,1e200000]}}}`, tm)), 422, "attrs.x.y[1]"},
		{"tiny number in attrs", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"attrs":{"t":-1.5e-20000}}`, tm)), 422, "attrs.t"},
		{"wrong type", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"model":["m"]}`, tm)), 422, "model"},
		{"unknown field", withLine2(fmt.Sprintf(`{"kind":"deploy","time":%q,"team":"x"}`, tm)), 422, "team"},
		{"truncated", withLine2(`{"kind":"deploy","ti`), 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.post("/api/v1/events", "application/x-ndjson", c.body)
			if r.status != c.status || r.err.Line != 2 || r.err.Field != c.field {
				t.Errorf("got %d line %d field %q (%s), want %d line 2 field %q", r.status, r.err.Line, r.err.Field, r.err.Error, c.status, c.field)
			}
		})
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("%d events stored by rejected requests, want 0", n)
	}
	// Large numbers numeric holds are kept as written.
	big := fmt.Sprintf(`{"kind":"deploy","time":%q,"attrs":{"build":123456789012345678901234567890,"f":1.5e300,"g":0.000001e-300}}`, tm)
	if r := e.post("/api/v1/events", "application/x-ndjson", []byte(big)); r.status != http.StatusOK {
		t.Fatalf("numbers numeric holds: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE attrs->>'build' = '123456789012345678901234567890'`); n != 1 {
		t.Fatalf("the build number was not kept as written")
	}
	if r := e.post("/api/v1/events", "text/plain", []byte(ok)); r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d", r.status)
	}
	if r := e.post("/api/v1/events", "application/x-ndjson", []byte(strings.Repeat(" ", 10))); r.status != http.StatusBadRequest {
		t.Fatalf("blank body: %d", r.status)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	body := ndjson(0, 1)
	cases := []struct {
		name, method, path, token string
		want                      int
	}{
		{"no token", "POST", "/api/v1/samples", "", 401},
		{"bad token", "POST", "/api/v1/samples", "wl_notatoken", 401},
		{"read token cannot write", "POST", "/api/v1/samples", e.read, 403},
		{"read token cannot post events", "POST", "/api/v1/events", e.read, 403},
		{"read token cannot open incidents", "POST", "/api/v1/incidents", e.read, 403},
		{"read token cannot post alerts", "POST", "/api/v1/alerts/alertmanager", e.read, 403},
		{"no token cannot read", "GET", "/api/v1/incidents", "", 401},
		{"read token reads", "GET", "/api/v1/incidents", e.read, 200},
		{"write token writes", "POST", "/api/v1/samples", e.write, 200},
		{"admin token writes", "POST", "/api/v1/samples", e.admin, 200},
	}
	for _, c := range cases {
		r := e.do(request{method: c.method, path: c.path, token: c.token, ctype: "application/x-ndjson", body: body})
		if r.status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.want)
		}
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := e.do(request{method: "GET", path: p}); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", ndjson(0, 5)))
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", ndjson(0, 5)))
	e.post("/api/v1/samples", "text/csv", []byte("x"))
	r := e.do(request{method: "GET", path: "/metrics"})
	for _, want := range []string{
		`waterline_ingest_records_total{kind="samples",outcome="accepted"} 5`,
		`waterline_ingest_records_total{kind="samples",outcome="duplicate"} 5`,
		`waterline_ingest_errors_total{kind="samples",reason="media_type"} 1`,
		`waterline_ingest_bytes_total{kind="samples"}`,
		`waterline_http_request_duration_seconds_count{method="POST",route="/api/v1/samples",status="200"} 2`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A method is the client's to choose: made-up ones share one label
	// (each had made a series of its own, never freed — anyone could
	// grow the server's memory and /metrics without a token).
	for i := range 20 {
		e.do(request{method: fmt.Sprintf("M%d%s", i, strings.Repeat("X", 1000)), path: "/healthz"})
	}
	r = e.do(request{method: "GET", path: "/metrics"})
	if strings.Contains(string(r.body), `method="M1`) || !strings.Contains(string(r.body), `method="other",route="/healthz"`) {
		t.Error("made-up methods are metric labels of their own")
	}
	// Not ready when the database is gone.
	e.pool.Close()
	if r := e.do(request{method: "GET", path: "/readyz"}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the pool closed: %d", r.status)
	}
}

// Numbers in attrs are kept as written: a build number past 2^53 came
// back rounded, and 1e400 was refused as "want an object".
func TestEventAttrsKeepTheirNumbers(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	body := fmt.Sprintf(`{"id":"ev-big","kind":"deploy","time":%q,"attrs":{"build":12345678901234567891,"pr":9007199254740993,"huge":1e400}}`,
		testNow.Add(-time.Hour).Format(time.RFC3339))
	if a, _ := accepted(t, e.post("/api/v1/events", "application/x-ndjson", []byte(body))); a != 1 {
		t.Fatalf("accepted %d", a)
	}
	got, err := e.st.Events(context.Background(), store.EventFilter{From: testNow.Add(-2 * time.Hour), To: testNow})
	if err != nil || len(got) != 1 {
		t.Fatalf("%d events (%v)", len(got), err)
	}
	// Compared as numbers: jsonb writes 1e400 out in full.
	for k, want := range map[string]string{"build": "12345678901234567891", "pr": "9007199254740993", "huge": "1e400"} {
		v, _, err1 := big.ParseFloat(fmt.Sprint(got[0].Attrs[k]), 10, 2000, big.ToNearestEven)
		w, _, err2 := big.ParseFloat(want, 10, 2000, big.ToNearestEven)
		if err1 != nil || err2 != nil || v.Cmp(w) != 0 {
			t.Errorf("attrs.%s = %v, want %s", k, got[0].Attrs[k], want)
		}
	}
}
