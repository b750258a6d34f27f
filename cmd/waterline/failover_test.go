package main

// Serve when Postgres fails over: real servers — a Prometheus scraping a
// simulated fleet, the shared Postgres behind a TCP proxy the test can
// freeze, as a failed-over server's old sessions look.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/internal/demo/promrun"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
)

// liveFleet starts fleet so's exporters on loopback and a Prometheus that
// holds its history and scrapes it live every so.Step. It sets so's
// Start (history before now), Onset (onsetIn from now) and Duration, and
// returns the fleet, the Prometheus and where the backfill stops.
// Real time, not the test clock: Prometheus stamps each scrape with the
// real time, and the fleet's exporters answer for that instant.
func liveFleet(t *testing.T, so *sim.Options, history, onsetIn time.Duration) (*sim.Fleet, *promtest.Prometheus, time.Time) {
	t.Helper()
	now := time.Now().UTC()
	so.Start = now.Truncate(so.Step).Add(-history)
	so.Onset = now.Add(onsetIn).Sub(so.Start).Round(time.Second)
	so.Duration = (so.Onset + 30*time.Minute).Truncate(so.Step)
	f, err := sim.New(*so)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	exp := &http.Server{Handler: exporterHandler(f, func() {}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = exp.Serve(ln) }()
	t.Cleanup(func() { _ = exp.Close() })
	prom := promtest.New(t)
	cut := time.Now()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(f.WriteOpenMetricsBefore(pw, cut, nil)) }()
	prom.Backfill(t, pr)
	var targets []promrun.Target
	for _, e := range sim.Exporters {
		targets = append(targets, promrun.Target{Job: e, Addr: ln.Addr().String(), Path: "/" + e + "/metrics"})
	}
	prom.Scrape(t, so.Step, targets)
	prom.Start(t)
	return f, prom, cut
}

// metricLine returns the value text of the first /metrics line that
// starts with prefix, or "".
func metricLine(base, prefix string) string {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return strings.TrimSpace(strings.TrimPrefix(sc.Text(), prefix))
		}
	}
	return ""
}

// SIGTERM while Postgres is cut off (a network partition: no FIN, no
// reset): serve must still exit within what README "Operations"
// promises an orchestrator — the drain (at least 30 s; here nothing is in
// flight) plus the webhook being sent (10 s) — or Kubernetes SIGKILLs it
// after terminationGracePeriodSeconds. serve runs as a process of its own
// (TestReplicaChild) and gets a real SIGTERM.
func TestServeStopsWhilePostgresIsCutOff(t *testing.T) {
	t.Parallel()
	const history = 70 * time.Minute
	_, prom, _ := liveFleet(t, &sim.Options{Seed: 3, Scenario: sim.Release, Models: 1, ReplicasPerModel: 2, Nodes: 2, Tenants: 2, TrafficScale: 0.5, Step: liveScrape}, history, time.Hour)
	_, viaProxy, hole := proxiedDatabase(t)
	cfg := filepath.Join(t.TempDir(), "waterline.yaml")
	if err := os.WriteFile(cfg, []byte(livePullConfig(history)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, err := pickAddr("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReplicaChild$", "-test.timeout=20m")
	cmd.Env = append(os.Environ(), "WATERLINE_REPLICA_CHILD=1", "WATERLINE_ADDR="+addr,
		"DATABASE_URL="+viaProxy, "PROMETHEUS_URL="+prom.URL, "WATERLINE_CONFIG="+cfg,
		"WATERLINE_PULL_INTERVAL="+livePull.String(), "WATERLINE_DETECT_INTERVAL="+liveDetect.String(),
		"WATERLINE_LOG_LEVEL=info", "WATERLINE_WEBHOOK_ALLOW_PRIVATE=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := "http://" + addr
	if err := waitReady(context.Background(), base+"/readyz", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for metricLine(base, "waterline_pull_leader ") != "1" {
		if time.Now().After(deadline) {
			t.Fatal("never the puller")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(12 * time.Second) // a few live rounds
	hole.silence()
	t.Logf("Postgres cut off at %s", time.Now().Format(time.TimeOnly))
	time.Sleep(20 * time.Second)
	stopAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	const budget = 30*time.Second + 10*time.Second + 5*time.Second
	select {
	case <-exited:
		took := time.Since(stopAt)
		t.Logf("serve exited %s after SIGTERM (%v)", took.Round(100*time.Millisecond), cmd.ProcessState)
		if took <= budget && cmd.ProcessState.Success() {
			return
		}
		t.Errorf("serve took %s to exit after SIGTERM with Postgres cut off (%v); want within %s", took.Round(time.Second), cmd.ProcessState, budget)
	case <-time.After(budget):
		t.Errorf("serve has not exited %s after SIGTERM with Postgres cut off; its goroutines follow", budget)
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
	}
	b, _ := os.ReadFile(logf.Name())
	t.Logf("serve log:\n%s", waterlineStacks(string(b)))
}

// waterlineStacks drops the goroutines of a SIGQUIT dump that run
// neither waterline nor pgx code.
func waterlineStacks(all string) string {
	var out []string
	for _, g := range strings.Split(all, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || strings.Contains(g, "waterline-dev/waterline/") || strings.Contains(g, "jackc/") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// A Postgres failover (or a NAT or firewall dropping established flows)
// leaves serve's open sessions dead without a FIN or reset, while new
// connections reach the server that took over. The pull loop and the
// detector must notice within about one lease-check interval and carry on
// over new connections (README "Scaling": "the cut-off holder stops its
// job once a lease check goes unanswered for one interval"). The pull
// loop's check before each round and every campaign (pool.Acquire, whose
// ping of an idle pooled connection had no deadline) waited for a TCP
// answer that never came: nothing was pulled and nothing detected until
// the kernel gave up on the socket (about 15 minutes with Linux defaults).
func TestLoopsResumeAfterPostgresSessionsAreCutOff(t *testing.T) {
	t.Parallel()
	var om strings.Builder
	om.WriteString("# TYPE up gauge\n")
	fmt.Fprintf(&om, "up{job=\"x\"} 1 %d\n# EOF\n", time.Now().Add(-time.Hour).Unix())
	prom := promtest.Run(t, strings.NewReader(om.String()))

	dbURL, viaProxy, px := proxiedDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dbURL) // straight to Postgres
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })

	cfg, err := pull.ParseConfig("test.yaml", []byte("presets: [inference]\nstep: 5s\ndelay: 5s\noverlap: 10s\nlookback: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p, err := pull.New(cfg, pull.Backend{URL: prom.URL}, st, pull.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	const interval = 2 * time.Second
	pullDone := make(chan struct{})
	go func() { _ = p.Run(ctx, interval); close(pullDone) }()
	var detectRuns atomic.Int64
	detectDone := make(chan struct{})
	go func() {
		runLeased(ctx, st, detectLease, interval, log, func(jctx context.Context) { detectRuns.Add(1); <-jctx.Done() })
		close(detectDone)
	}()
	t.Cleanup(func() {
		cancel()
		// The loops stuck on a dead socket do not end with ctx either;
		// the proxy's cleanup closes the sockets, which frees them.
	})

	newest := func() time.Time {
		var c *time.Time
		if err := admin.QueryRow(ctx, `SELECT max(last_success) FROM pull_cursors`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return time.Time{}
		}
		return *c
	}
	deadline := time.Now().Add(time.Minute)
	for newest().IsZero() || detectRuns.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("loops never ran; log:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * interval) // a pooled connection or two sit idle now

	// The failover: every open session is dead to serve, and gone on the
	// server (the old primary's locks with it).
	px.freeze()
	cutAt := time.Now()
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}

	// Within a minute both loops work again over new connections.
	deadline = cutAt.Add(time.Minute)
	pulled, detecting := false, false
	for !(pulled && detecting) && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		pulled = pulled || newest().After(cutAt)
		detecting = detecting || detectRuns.Load() > 1
	}
	if !pulled {
		t.Errorf("no source pulled in the minute after Postgres' sessions were cut off (last success %s, cut at %s)",
			newest().Format(time.TimeOnly), cutAt.Format(time.TimeOnly))
	}
	if !detecting {
		t.Errorf("the detector's lease was not taken again in the minute after Postgres' sessions were cut off")
	}
	if t.Failed() {
		t.Logf("log since the cut:\n%s", logs.String())
		buf := make([]byte, 1<<22)
		n := runtime.Stack(buf, true)
		var stuck []string
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "waterline-dev/waterline/pull.(*Puller).Run") || strings.Contains(g, "runLeased") {
				stuck = append(stuck, g)
			}
		}
		t.Logf("where the loops wait:\n%s", strings.Join(stuck, "\n\n"))
	}
}
