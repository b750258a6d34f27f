package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web/webhook"
	"github.com/waterline-dev/waterline/wire"
)

// TestReplicaChild is not a test: TestTwoReplicasLive runs the test
// binary again with WATERLINE_REPLICA_CHILD=1 to get `waterline serve`
// as a process of its own, which it can SIGKILL.
func TestReplicaChild(t *testing.T) {
	if os.Getenv("WATERLINE_REPLICA_CHILD") != "1" {
		t.Skip("only run as a replica of TestTwoReplicasLive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, []string{"serve"}, os.Getenv, os.Stdout, os.Stderr); err != nil {
		t.Fatal(err)
	}
}

// replica is one `waterline serve` process.
type replica struct {
	name string
	base string
	cmd  *exec.Cmd
	done chan struct{}
}

func startReplica(t *testing.T, name string, env map[string]string) *replica {
	t.Helper()
	addr, err := pickAddr("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReplicaChild$", "-test.timeout=20m")
	cmd.Env = append(os.Environ(), "WATERLINE_REPLICA_CHILD=1", "WATERLINE_ADDR="+addr)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, base: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(r.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-r.done:
		case <-time.After(45 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s log (tail):\n%s", name, lastChars(string(b), 3000))
		}
	})
	if err := waitReady(context.Background(), r.base+"/readyz", nil); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func lastChars(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// leader reads the replica's waterline_pull_leader gauge.
func (r *replica) leader() bool {
	res, err := http.Get(r.base + "/metrics")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if sc.Text() == "waterline_pull_leader 1" {
			return true
		}
	}
	return false
}

// TestTwoReplicasLive runs two `serve` processes on one Postgres with the
// pull loop, the detector and webhooks on in both, against a Prometheus
// scraping a simulated fleet live. It SIGKILLs the replica holding the
// pull lease and checks that the other takes over within one pull
// interval plus the time Postgres takes to drop a dead session, starts
// the killed one again, and then, once the injected incident has
// happened: no curve point is missing and none is off the grid, the
// detectors opened one incident, and the receiver got each webhook event
// once per idempotency key.
func TestTwoReplicasLive(t *testing.T) {
	t.Parallel()
	const (
		scrape   = 5 * time.Second
		pullIvl  = 5 * time.Second
		history  = 70 * time.Minute
		takeover = pullIvl + 5*time.Second // the retry, and Postgres ending the dead session
	)
	so := sim.Options{Seed: 2, Scenario: sim.Release, Models: 2, ReplicasPerModel: 2, Nodes: 3, Tenants: 4, TrafficScale: 0.7, Step: scrape}
	f, prom, cut := liveFleet(t, &so, history, 20*time.Second)
	truth := f.Truth()
	onset := *truth.Onset

	// One database, a webhook to a receiver that counts keys, events and
	// samples pushed as they happen.
	dbURL := storetest.NewDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	token, _, err := st.CreateToken(ctx, "replicas", store.ScopeAdmin)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	keys := map[string]int{}
	hook := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(liveWebhookSecret, r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), raw, time.Now()); err != nil {
			t.Errorf("webhook: %v", err)
		}
		mu.Lock()
		keys[r.Header.Get(webhook.HeaderIdempotencyKey)]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hook.Serve(hln) }()
	t.Cleanup(func() { _ = hook.Close() })

	cfg := filepath.Join(t.TempDir(), "waterline.yaml")
	if err := os.WriteFile(cfg, []byte(livePullConfig(history)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DATABASE_URL": dbURL, "PROMETHEUS_URL": prom.URL, "WATERLINE_CONFIG": cfg,
		"WATERLINE_PULL_INTERVAL": pullIvl.String(), "WATERLINE_DETECT_INTERVAL": liveDetect.String(),
		"WATERLINE_LOG_LEVEL": "info",
		// The receiver is on this machine.
		"WATERLINE_WEBHOOK_ALLOW_PRIVATE": "true",
	}
	a := startReplica(t, "replica-a", env)
	b := startReplica(t, "replica-b", env)
	api := newAPIClient(a.base, token)
	body, _ := json.Marshal(wire.WebhookCreate{URL: "http://" + hln.Addr().String() + "/hook", Secret: liveWebhookSecret})
	if err := api.do(ctx, http.MethodPost, "/api/v1/webhooks", "application/json", strings.NewReader(string(body)), nil); err != nil {
		t.Fatal(err)
	}
	d := &demo{p: newProgress(io.Discard, 1)}
	s := &demoServer{api: api}
	fl := &demoFleet{f: f}
	if _, err := d.pushRange(ctx, s, fl, so.Start, cut); err != nil {
		t.Fatal(err)
	}
	pctx, stopPush := context.WithCancel(ctx)
	defer stopPush()
	go d.pushLive(pctx, s, fl, cut)

	// Find the pull leader once the history is in, and SIGKILL it.
	var holder, other *replica
	deadline := time.Now().Add(time.Minute)
	for holder == nil && time.Now().Before(deadline) {
		for _, r := range []*replica{a, b} {
			if r.leader() {
				holder = r
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if holder == nil {
		t.Fatal("no replica took the pull lease within a minute")
	}
	other = a
	if holder == a {
		other = b
	}
	time.Sleep(8 * time.Second) // a few rounds of live pulls
	killed := time.Now()
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-holder.done
	for !other.leader() {
		if time.Since(killed) > 2*takeover {
			t.Fatalf("%s did not take the pull lease within %s of %s's SIGKILL", other.name, 2*takeover, holder.name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(killed)
	t.Logf("%s SIGKILLed; %s took the pull lease after %s", holder.name, other.name, took.Round(10*time.Millisecond))
	if took > takeover {
		t.Errorf("takeover took %s, want within one pull interval plus the session drop (%s)", took, takeover)
	}
	// The killed replica comes back: two detectors and two notifiers
	// again while the incident happens.
	startReplica(t, holder.name+"-again", env)

	// Wait for the detector's incident and its analysis.
	var inc store.Incident
	deadline = onset.Add(5 * time.Minute)
	for inc.ID == 0 || inc.AnalysisStatus != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("no detector incident with a ready analysis within 5 minutes of the onset (%s); incident %+v", onset.Format(time.TimeOnly), inc)
		}
		time.Sleep(time.Second)
		page, _, err := st.ListIncidents(ctx, store.IncidentFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page {
			if in.Source == store.SourceDetector {
				inc = in
			}
		}
	}
	time.Sleep(3 * time.Second) // deliveries in flight
	stopPush()
	t.Logf("incident #%d opened %s after the onset: %s", inc.ID, inc.CreatedAt.Sub(onset).Round(time.Second), inc.Title)

	if inc.Scope.Model != truth.Target.Model {
		t.Errorf("incident on %q, the release hit %q", inc.Scope.Model, truth.Target.Model)
	}
	// One incident for the spike.
	page, _, err := st.ListIncidents(ctx, store.IncidentFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 1 {
		for _, in := range page {
			t.Logf("incident #%d %s %s start %s", in.ID, in.Source, in.Title, in.Start)
		}
		t.Errorf("%d incidents, want the detectors' one", len(page))
	}

	// Each delivery once per idempotency key, and every queued one sent.
	mu.Lock()
	for k, n := range keys {
		if n != 1 {
			t.Errorf("webhook key %s delivered %d times", k, n)
		}
	}
	got := len(keys)
	mu.Unlock()
	var queued int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if got == 0 || got != queued {
		t.Errorf("receiver got %d keys, %d deliveries queued", got, queued)
	}

	// Every live curve point is on the 5 s grid, none missing: each
	// pulled P99 series has one point per step from the first to the last
	// pulled one.
	rows, err := conn.Query(ctx, `
		SELECT s.key, count(*), min(p.time), max(p.time),
		       count(*) FILTER (WHERE extract(epoch FROM p.time)::bigint % 5 <> 0 OR extract(milliseconds FROM p.time)::bigint % 1000 <> 0)
		FROM points p JOIN series s ON s.id = p.series_id
		WHERE s.role = 'latency_p99' AND p.time >= $1
		GROUP BY s.key`, cut.Add(-10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var key string
		var count, offGrid int64
		var lo, hi time.Time
		if err := rows.Scan(&key, &count, &lo, &hi, &offGrid); err != nil {
			t.Fatal(err)
		}
		n++
		want := int64(hi.Sub(lo)/scrape) + 1
		if count != want || offGrid != 0 {
			t.Errorf("%s: %d points from %s to %s, want %d; %d off the 5 s grid", key, count, lo.Format(time.TimeOnly), hi.Format(time.TimeOnly), want, offGrid)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no P99 series pulled")
	}
}
