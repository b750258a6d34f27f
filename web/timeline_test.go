package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/wire"
)

// seedCurves writes 24 h of curves at 15 s ending at testNow: chat's model
// p99 at 100 ms with one 15-second spike to 900 ms, qps 10, two chat
// replicas on n1 and n2 and one embed replica on n3, and node CPU for all
// three nodes.
func seedCurves(t *testing.T, st *store.Store) (from, spikeAt time.Time) {
	t.Helper()
	ctx := context.Background()
	from = testNow.Add(-24 * time.Hour)
	spikeAt = from.Add(10*time.Hour + 15*time.Second)
	n := int(24 * time.Hour / (15 * time.Second))
	series := func(role correlate.Role, level correlate.Level, scope correlate.Scope, v func(time.Time) float64) correlate.Curve {
		c := correlate.Curve{Role: role, Level: level, Scope: scope}
		for i := 0; i < n; i++ {
			at := from.Add(time.Duration(i) * 15 * time.Second)
			c.Points = append(c.Points, correlate.Point{T: at.UnixMilli(), V: v(at)})
		}
		return c
	}
	flat := func(x float64) func(time.Time) float64 { return func(time.Time) float64 { return x } }
	curves := []correlate.Curve{
		series(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "chat"}, func(at time.Time) float64 {
			if at.Equal(spikeAt) {
				return 900
			}
			return 100
		}),
		series(correlate.RoleQPS, correlate.LevelModel, correlate.Scope{Model: "chat"}, flat(10)),
		series(correlate.RoleQPS, correlate.LevelModel, correlate.Scope{Model: "embed"}, flat(5)),
		series(correlate.RoleQPS, correlate.LevelReplica, correlate.Scope{Model: "chat", Version: "v1", Replica: "chat-a", Node: "n1"}, flat(5)),
		series(correlate.RoleQPS, correlate.LevelReplica, correlate.Scope{Model: "chat", Version: "v1", Replica: "chat-b", Node: "n2"}, flat(5)),
		series(correlate.RoleQPS, correlate.LevelReplica, correlate.Scope{Model: "embed", Version: "v5", Replica: "embed-a", Node: "n3"}, flat(5)),
		series(correlate.RoleNodeCPU, correlate.LevelNode, correlate.Scope{Node: "n1"}, flat(0.5)),
		series(correlate.RoleNodeCPU, correlate.LevelNode, correlate.Scope{Node: "n2"}, flat(0.5)),
		series(correlate.RoleNodeCPU, correlate.LevelNode, correlate.Scope{Node: "n3"}, flat(0.5)),
	}
	storetest.WriteCurves(t, st, curves)
	evs := []correlate.Event{
		{ID: "d1", Kind: correlate.KindDeploy, Time: spikeAt.Add(-5 * time.Minute), Scope: correlate.Scope{Model: "chat", Version: "v1"}},
		{ID: "d2", Kind: correlate.KindDeploy, Time: spikeAt, Scope: correlate.Scope{Model: "embed", Version: "v5"}},
		{ID: "f1", Kind: correlate.KindNodeFault, Time: spikeAt, Scope: correlate.Scope{Node: "n1"}},
		{ID: "f2", Kind: correlate.KindNodeFault, Time: spikeAt, Scope: correlate.Scope{Node: "n3"}},
	}
	if _, _, err := st.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return from, spikeAt
}

func (e *apiEnv) timeline(q url.Values) (response, wire.Timeline) {
	e.t.Helper()
	r := e.do(request{method: "GET", path: "/api/v1/timeline?" + q.Encode(), token: e.read})
	var b wire.Timeline
	if r.status == 200 {
		if err := json.Unmarshal(r.body, &b); err != nil {
			e.t.Fatal(err)
		}
	}
	return r, b
}

func keys(b wire.Timeline) string {
	var out []string
	for _, c := range b.Curves {
		out = append(out, c.Key())
	}
	return strings.Join(out, "\n")
}

func TestTimelineDownsamplesAndScopes(t *testing.T) {
	e := newAPIEnv(t)
	from, spikeAt := seedCurves(t, e.st)
	win := url.Values{"from": {from.Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}}

	r, b := e.timeline(win)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if b.StepSeconds != 288 || b.Spikes == nil {
		t.Fatalf("step %v, spikes %v; want the default 24h/300 = 288s and an empty list", b.StepSeconds, b.Spikes)
	}
	// No replica curves without a replica or node filter.
	if got := keys(b); strings.Contains(got, "|replica|") || !strings.Contains(got, "node_cpu|node|node=n3") {
		t.Fatalf("curves:\n%s", got)
	}
	for _, c := range b.Curves {
		if len(c.Points) > 301 {
			t.Errorf("%s: %d points, want ≤ 301", c.Key(), len(c.Points))
		}
		if c.Role == correlate.RoleLatencyP99 {
			peak := 0.0
			for _, p := range c.Points {
				peak = max(peak, p.V)
			}
			if peak != 900 {
				t.Errorf("downsampled p99 peak = %v, want the 900 ms spike kept", peak)
			}
		}
		if c.Role == correlate.RoleQPS && c.Scope.Model == "chat" && c.Points[0].V != 10 {
			t.Errorf("qps bucket = %v, want the mean 10", c.Points[0].V)
		}
	}

	// One model: its curves and the nodes its replicas ran on.
	q := url.Values{"model": {"chat"}}
	for k, v := range win {
		q[k] = v
	}
	_, b = e.timeline(q)
	if got := keys(b); got != "latency_p99|model|model=chat\nnode_cpu|node|node=n1\nnode_cpu|node|node=n2\nqps|model|model=chat" {
		t.Fatalf("model=chat curves:\n%s", got)
	}
	// One replica: its curves, its node and its model; events of its
	// model and node only.
	q = url.Values{"replica": {"chat-a"}, "step": {"60s"}, "from": {spikeAt.Add(-time.Hour).Format(time.RFC3339)}, "to": {spikeAt.Add(time.Hour).Format(time.RFC3339)}}
	_, b = e.timeline(q)
	if got := keys(b); got != "latency_p99|model|model=chat\nnode_cpu|node|node=n1\nqps|model|model=chat\nqps|replica|model=chat version=v1 replica=chat-a node=n1" {
		t.Fatalf("replica=chat-a curves:\n%s", got)
	}
	var ids []string
	for _, ev := range b.Events {
		ids = append(ids, ev.ID)
	}
	if strings.Join(ids, ",") != "d1,f1" {
		t.Fatalf("replica=chat-a events = %v, want d1 (its model's deploy) and f1 (its node's fault)", ids)
	}
	if n := len(b.Curves[0].Points); n != 121 {
		t.Errorf("2 h at step=60s, both ends included: %d points, want 121", n)
	}
	// roles= narrows.
	q.Set("roles", "qps")
	if _, b = e.timeline(q); len(b.Curves) != 2 {
		t.Fatalf("roles=qps: %s", keys(b))
	}
}

func TestTimelineBadParameters(t *testing.T) {
	e := newAPIEnv(t)
	at, day := testNow.Format(time.RFC3339), testNow.Add(-24*time.Hour).Format(time.RFC3339)
	for _, tc := range []struct {
		query, field, msg string
	}{
		{"to=" + at, "from", "required"},
		{"from=yesterday&to=" + at, "from", `cannot parse "yesterday"`},
		{"from=" + at + "&to=" + at, "to", "end timestamp must be after start timestamp"},
		{"from=" + testNow.Add(-30*24*time.Hour).Format(time.RFC3339) + "&to=" + at + "&step=15s", "step", "exceeded maximum resolution of 11,000 points per timeseries; try decreasing the query resolution (?step=236s)"},
		{"from=" + day + "&to=" + at + "&step=0", "step", "not accepted"},
		{"from=" + day + "&to=" + at + "&roles=latency_p99,latency_p999", "roles", `unknown role "latency_p999"`},
		{"from=" + day + "&to=" + at + "&levels=pod", "levels", `unknown level "pod"`},
		{"from=0&to=" + at, "from", "exceeds the maximum of 744h0m0s"},
	} {
		r := e.do(request{method: "GET", path: "/api/v1/timeline?" + tc.query, token: e.read})
		if r.status != 400 || r.err.Field != tc.field || !strings.Contains(r.err.Error, tc.msg) {
			t.Errorf("%s: %d %+v; want 400 on %s with %q", tc.query, r.status, r.err, tc.field, tc.msg)
		}
	}
	if r := e.do(request{method: "GET", path: "/api/v1/timeline?from=0&to=1"}); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
}

func TestPullStatus(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	cursor := testNow.Add(-90 * time.Second)
	if err := e.st.AdvancePullCursor(ctx, "inference/qps@model", cursor, testNow, 120); err != nil {
		t.Fatal(err)
	}
	if err := e.st.RecordPullError(ctx, "node/node_cpu@node", cursor, testNow, testNow, "connection refused", true); err != nil {
		t.Fatal(err)
	}
	r := e.do(request{method: "GET", path: "/api/v1/pull/status", token: e.read})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var v wire.PullStatus
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	if v.LeaderActive || len(v.Sources) != 2 || v.Sources[0].LagSeconds != 90 || v.Sources[1].LastError != "connection refused" {
		t.Fatalf("status = %+v", v)
	}
	if len(v.OpenGaps) != 1 || v.OpenGaps[0].Source != "node/node_cpu@node" || v.Summary.Failing != 1 || v.Summary.PointsTotal != 120 {
		t.Fatalf("status = %+v", v)
	}
}

// levels=replica over a large fleet answered every replica's every role:
// 5,000 series made a 51 MB answer and held it in memory, and nothing
// bounded how many such requests ran. Past a million points (series ×
// steps) the answer is a 400 that says how to narrow it.
func TestTimelineAnswerIsBounded(t *testing.T) {
	e := newAPIEnv(t)
	from := testNow.Add(-time.Hour)
	curves := replicaFleet(from, 300)
	storetest.WriteCurves(t, e.st, curves)
	q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}, "levels": {"replica"}}
	var tl wire.Timeline
	if r := e.get("/api/v1/timeline?"+q.Encode(), &tl); r.status != 200 || len(tl.Curves) != 300 {
		t.Fatalf("300 replicas at the default step: %d, %d curves", r.status, len(tl.Curves))
	}
	q.Set("step", "1s") // 300 series × 3,600 steps
	if r := e.get("/api/v1/timeline?"+q.Encode(), nil); r.status != 400 || r.err.Field != "levels" || !strings.Contains(r.err.Error, "step") {
		t.Fatalf("300 series at 1 s: %d %+v", r.status, r.err)
	}
	// The default levels (fleet, model, version, node) are bounded too:
	// 300 node curves at 1 s.
	for i := range curves {
		curves[i].Level, curves[i].Scope = correlate.LevelNode, correlate.Scope{Node: fmt.Sprintf("n-%03d", i)}
	}
	storetest.WriteCurves(t, e.st, curves)
	q.Del("levels")
	if r := e.get("/api/v1/timeline?"+q.Encode(), nil); r.status != 400 || r.err.Field != "step" {
		t.Fatalf("300 node curves at 1 s without levels=: %d %+v", r.status, r.err)
	}
}

// Spikes at a finer level are bounded before anything is read: a month of
// every replica's quantiles (with the baselines' history) was gigabytes.
// The same curves over a day answer.
func TestReplicaSpikesAreBounded(t *testing.T) {
	e := newAPIEnv(t)
	from := testNow.Add(-time.Hour)
	curves := replicaFleet(from, 300)
	storetest.WriteCurves(t, e.st, curves)
	q := url.Values{"from": {testNow.Add(-30 * 24 * time.Hour).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}, "level": {"replica"}}
	if r := e.get("/api/v1/spikes?"+q.Encode(), nil); r.status != 400 || r.err.Field != "level" {
		t.Fatalf("300 replicas over 30 days: %d %+v", r.status, r.err)
	}
	q.Set("from", testNow.Add(-2*time.Hour).Format(time.RFC3339))
	if r := e.get("/api/v1/spikes?"+q.Encode(), nil); r.status != 200 {
		t.Fatalf("300 replicas over 2 hours: %d %+v", r.status, r.err)
	}
}

// replicaFleet is n replicas' P99 curves of chat, eight points from from.
func replicaFleet(from time.Time, n int) []correlate.Curve {
	var curves []correlate.Curve
	for i := range n {
		c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelReplica,
			Scope: correlate.Scope{Model: "chat", Replica: fmt.Sprintf("chat-%03d", i), Node: "n1"}}
		for k := range 8 {
			c.Points = append(c.Points, correlate.Point{T: from.Add(time.Duration(k) * 5 * time.Minute).UnixMilli(), V: 100})
		}
		curves = append(curves, c)
	}
	return curves
}

// The timeline lists at most 5,000 events, and says when it left some
// out: 5,200 restarts answered exactly 5,000 with nothing to tell.
func TestTimelineSaysWhenEventsAreCut(t *testing.T) {
	e := newAPIEnv(t)
	from := testNow.Add(-time.Hour)
	var nd strings.Builder
	for i := range 5001 {
		fmt.Fprintf(&nd, `{"time":%q,"kind":"replica_restart","model":"chat","replica":"chat-%d"}`+"\n",
			from.Add(time.Duration(i)*500*time.Millisecond).Format(time.RFC3339Nano), i)
	}
	// The deploy, last in time, is what a cut must keep: changes first.
	fmt.Fprintf(&nd, `{"time":%q,"kind":"deploy","model":"chat","version":"v9"}`+"\n", testNow.Add(-time.Minute).Format(time.RFC3339))
	if r := e.post("/api/v1/events", "application/x-ndjson", []byte(nd.String())); r.status >= 300 {
		t.Fatalf("events: %d %s", r.status, r.body)
	}
	q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}}
	var raw map[string]json.RawMessage
	if r := e.get("/api/v1/timeline?"+q.Encode(), &raw); r.status != 200 {
		t.Fatalf("timeline: %d %s", r.status, r.body)
	}
	var events []json.RawMessage
	_ = json.Unmarshal(raw["events"], &events)
	if len(events) != 5000 || string(raw["events_truncated"]) != "true" {
		t.Errorf("5,002 events: %d listed, events_truncated %s", len(events), raw["events_truncated"])
	}
	if len(events) == 0 || !strings.Contains(string(events[len(events)-1]), `"deploy"`) {
		t.Errorf("the cut dropped the deploy")
	}
	q.Set("from", from.Add(1500*time.Millisecond).Format(time.RFC3339Nano)) // 4,998 restarts and the deploy left
	raw = nil
	if r := e.get("/api/v1/timeline?"+q.Encode(), &raw); r.status != 200 || string(raw["events_truncated"]) != "false" {
		t.Errorf("4,999 events: %d events_truncated %s", r.status, raw["events_truncated"])
	}
}

// Model-level spikes are bounded as the finer levels are: a month of 300
// models' quantiles (and their baselines' history) was read whole, by
// /spikes without level= and by every /timeline without model=.
func TestModelSpikesAreBounded(t *testing.T) {
	e := newAPIEnv(t)
	from := testNow.Add(-time.Hour)
	curves := replicaFleet(from, 300)
	for i := range curves {
		curves[i].Level, curves[i].Scope = correlate.LevelModel, correlate.Scope{Model: fmt.Sprintf("m-%03d", i)}
	}
	storetest.WriteCurves(t, e.st, curves)
	month := url.Values{"from": {testNow.Add(-30 * 24 * time.Hour).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}}
	if r := e.get("/api/v1/spikes?"+month.Encode(), nil); r.status != 400 || r.err.Field != "level" {
		t.Errorf("300 models' spikes over 30 days: %d %+v", r.status, r.err)
	}
	month.Set("step", "1h")
	if r := e.get("/api/v1/timeline?"+month.Encode(), nil); r.status != 400 || r.err.Field != "model" {
		t.Errorf("300 models' timeline over 30 days: %d %+v", r.status, r.err)
	}
	hours := url.Values{"from": {testNow.Add(-2 * time.Hour).Format(time.RFC3339)}, "to": {testNow.Format(time.RFC3339)}}
	for _, path := range []string{"/api/v1/spikes?", "/api/v1/timeline?"} {
		if r := e.get(path+hours.Encode(), nil); r.status != 200 {
			t.Errorf("%s over 2 hours: %d %+v", path, r.status, r.err)
		}
	}
}
