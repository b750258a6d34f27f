package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/freeport"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/wire"
)

// scenariosDir finds the shared incident bundles: $WATERLINE_SCENARIOS, or
// ../shared/scenarios next to the repository.
func scenariosDir(t *testing.T) string {
	if d := os.Getenv("WATERLINE_SCENARIOS"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "scenarios")
		}
	}
	return ""
}

// omChange is one change the bundle's kube-state-metrics contain, found by
// reading the OpenMetrics text directly (not through Waterline's code).
type omChange struct {
	kind, model, replica, node string
	at                         time.Time
}

// scanBundle lists the scale-ups, new replicas, restarts and node faults in
// a bundle's metrics.om.gz.
func scanBundle(t *testing.T, path string) (want []omChange, start, end time.Time) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	prev := map[string]float64{}
	podModel, podNode := map[string]string{}, map[string]string{}
	var starts []struct {
		pod string
		v   float64
	}
	var first int64
	label := func(series, name string) string {
		i := strings.Index(series, name+`="`)
		if i < 0 {
			return ""
		}
		rest := series[i+len(name)+2:]
		return rest[:strings.IndexByte(rest, '"')]
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lastTs int64
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		j := strings.LastIndexByte(line, ' ')
		i := strings.LastIndexByte(line[:j], ' ')
		series, vs, tss := line[:i], line[i+1:j], line[j+1:]
		v, _ := strconv.ParseFloat(vs, 64)
		ts, _ := strconv.ParseInt(tss, 10, 64)
		if first == 0 || ts < first {
			first = ts
		}
		lastTs = max(lastTs, ts)
		at := time.Unix(ts, 0).UTC()
		name := series[:strings.IndexByte(series, '{')]
		p, seen := prev[series]
		prev[series] = v
		switch name {
		case "kube_pod_labels":
			podModel[label(series, "pod")] = label(series, "label_app")
		case "kube_pod_info":
			podNode[label(series, "pod")] = label(series, "node")
		case "kube_pod_start_time":
			if !seen {
				starts = append(starts, struct {
					pod string
					v   float64
				}{label(series, "pod"), v})
			}
		case "kube_horizontalpodautoscaler_status_desired_replicas":
			if seen && v > p {
				want = append(want, omChange{kind: "scale_up", model: label(series, "horizontalpodautoscaler"), at: at})
			}
		case "kube_pod_container_status_restarts_total":
			if seen && v > p {
				want = append(want, omChange{kind: "replica_restart", replica: label(series, "pod"), at: at})
			}
		case "kube_node_status_condition":
			if label(series, "condition") == "Ready" && label(series, "status") == "true" && seen && v != p {
				kind := "node_fault"
				if v == 1 {
					kind = "node_recovered"
				}
				want = append(want, omChange{kind: kind, node: label(series, "node"), at: at})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range starts {
		if int64(s.v) >= first {
			want = append(want, omChange{kind: "replica_start", replica: s.pod, at: time.Unix(int64(s.v), 0).UTC()})
		}
	}
	for i := range want {
		if r := want[i].replica; r != "" {
			want[i].model, want[i].node = podModel[r], podNode[r]
		}
	}
	return want, time.Unix(first, 0).UTC(), time.Unix(lastTs, 0).UTC()
}

// TestBundlesTimelineShowsKubeChanges replays every shared bundle: it
// backfills metrics.om.gz into a real Prometheus, runs "waterline pull"
// over the bundle's range, and checks that GET /api/v1/timeline shows each
// scale-up, new replica, restart and node fault of the metrics, with the
// right model, replica and node.
func TestBundlesTimelineShowsKubeChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("a replay of whole incident bundles: -short leaves it out (make test runs it in a pass of its own, without -race)")
	}
	dir := scenariosDir(t)
	bundles, _ := filepath.Glob(filepath.Join(dir, "*", "metrics.om.gz"))
	if len(bundles) == 0 {
		t.Skipf("no incident bundles in %q (set WATERLINE_SCENARIOS to a folder of bundles with metrics.om.gz)", dir)
	}
	for _, b := range bundles {
		name := filepath.Base(filepath.Dir(b))
		t.Run(name, func(t *testing.T) {
			want, start, end := scanBundle(t, b)
			f, err := os.Open(b)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			prom := promtest.Run(t, zr)
			f.Close()
			dbURL := storetest.NewDatabase(t)
			env := map[string]string{"DATABASE_URL": dbURL, "PROMETHEUS_URL": prom.URL}
			var stderr bytes.Buffer
			err = run(context.Background(), []string{"pull", "--from", start.Format(time.RFC3339), "--to", end.Format(time.RFC3339)},
				func(k string) string { return env[k] }, &bytes.Buffer{}, &stderr)
			if err != nil {
				t.Fatalf("waterline pull: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "pulled ") {
				t.Errorf("no summary on stderr:\n%s", stderr.String())
			}
			tl := getTimeline(t, dbURL, start, end)
			t.Logf("%d kube changes in the metrics, %d events on the timeline", len(want), len(tl.Events))
			for _, w := range want {
				if !tl.has(w) {
					t.Errorf("timeline lacks %s model=%s replica=%s node=%s at %s", w.kind, w.model, w.replica, w.node, w.at.Format(time.RFC3339))
				}
			}
			// Nothing invented: as many restarts, starts and node flips as
			// the metrics hold.
			for _, kind := range []string{"replica_restart", "replica_start", "node_fault", "node_recovered"} {
				n := 0
				for _, w := range want {
					if w.kind == kind {
						n++
					}
				}
				if got := tl.count(kind); got != n {
					t.Errorf("%d %s events, the metrics hold %d", got, kind, n)
				}
			}
		})
	}
}

type timelineAnswer struct{ wire.Timeline }

func (tl timelineAnswer) has(w omChange) bool {
	for _, e := range tl.Events {
		d := e.Time.Sub(w.at)
		if string(e.Kind) == w.kind && e.Model == w.model && e.Replica == w.replica && e.Node == w.node && d >= -15*time.Second && d <= 15*time.Second {
			return true
		}
	}
	return false
}

func (tl timelineAnswer) count(kind string) int {
	n := 0
	for _, e := range tl.Events {
		if string(e.Kind) == kind {
			n++
		}
	}
	return n
}

// getTimeline asks the HTTP API, with a read token, for the whole bundle.
func getTimeline(t *testing.T, dbURL string, from, to time.Time) timelineAnswer {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret, _, err := st.CreateToken(ctx, "test", store.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	srv := web.NewServer(web.Config{PublicURL: "http://waterline.test", RequestTimeout: time.Minute}, web.Deps{Store: st})
	q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/timeline?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET timeline: %d %s", rec.Code, rec.Body.String())
	}
	var tl timelineAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &tl); err != nil {
		t.Fatal(err)
	}
	if len(tl.Curves) == 0 || tl.Spikes == nil {
		t.Fatalf("timeline has %d curves, spikes %v", len(tl.Curves), tl.Spikes)
	}
	sort.Slice(tl.Events, func(i, j int) bool { return tl.Events[i].Time.Before(tl.Events[j].Time) })
	return tl
}

// waterline pull fails fast, non-zero, with one clear line.
func TestPullCommandErrors(t *testing.T) {
	dbURL := storetest.NewDatabase(t)
	closed := "http://" + freeAddr(t)
	at := "2026-10-06T06:00:00Z"
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"pull", "--to", at}, nil, "--from is required"},
		{[]string{"pull", "--from", "yesterday", "--to", at}, nil, `--from: want RFC 3339`},
		{[]string{"pull", "--from", at, "--to", at}, nil, "must be after --from"},
		{[]string{"pull", "--from", "1791266400", "--to", "1791270000"}, map[string]string{"DATABASE_URL": dbURL}, "PROMETHEUS_URL (or -prometheus-url) is required"},
		{[]string{"pull", "--from", at, "--to", "2026-10-06T07:00:00Z"}, map[string]string{"DATABASE_URL": dbURL, "PROMETHEUS_URL": closed},
			"cannot validate queries against " + closed},
		{[]string{"pull", "--from", at, "--to", "2026-10-06T07:00:00Z"}, map[string]string{"DATABASE_URL": dbURL, "PROMETHEUS_URL": closed,
			"WATERLINE_CONFIG": writeFile(t, "bad.yaml", "queries:\n  - {role: p99, level: model, labels: {model: m}, expr: x}\n")},
			`bad.yaml:2: queries[0]: unknown role "p99"`},
	} {
		err := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
