package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/wire"
)

// demoRun is `waterline demo` running in the test process.
type demoRun struct {
	stdout, stderr *syncbuf.Buffer
	cancel         context.CancelFunc
	done           chan error
}

func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &demoRun{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	// No DATABASE_URL: the demo starts its own Postgres, as on a fresh machine.
	go func() {
		d.done <- run(ctx, append([]string{"demo"}, args...), envMap(nil), d.stdout, d.stderr)
	}()
	t.Cleanup(func() { _ = d.stop() })
	return d
}

// wait returns the first submatch of re in stderr+stdout once it appears.
func (d *demoRun) wait(t *testing.T, re *regexp.Regexp, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(d.stderr.String() + d.stdout.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("demo exited before %s: %v\nstderr:\n%s\nstdout:\n%s", re, err, d.stderr, d.stdout)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no %s within %s\nstderr:\n%s\nstdout:\n%s", re, within, d.stderr, d.stdout)
	return ""
}

// stop is Ctrl-C: cancel and wait for run to return.
func (d *demoRun) stop() error {
	d.cancel()
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(90 * time.Second):
		return errors.New("demo did not stop within 90s")
	}
}

var (
	reWorkDir  = regexp.MustCompile(`working in (\S+)`)
	rePgPort   = regexp.MustCompile(`private cluster on (127\.0\.0\.1:\d+)`)
	rePromURL  = regexp.MustCompile(`serving on (http://\S+)`)
	reIncident = regexp.MustCompile(`incident page:\s+(http://\S+)`)
	reToken    = regexp.MustCompile(`TOKEN=(wl_\w+)`)
	reWL       = regexp.MustCompile(`export WL=(http://\S+)`)
	reShare    = regexp.MustCompile(`share link:\s+(http://\S+)`)
)

// TestDemoEndToEnd runs the README's first command on a small fleet: it
// must end with an incident page whose analysis ranks the injected cause
// first, keep serving, and leave nothing behind after Ctrl-C.
func TestDemoEndToEnd(t *testing.T) {
	d := startDemo(t, "-small", "-scenario", "release", "-seed", "1", "-addr", "127.0.0.1:0")
	dir := d.wait(t, reWorkDir, 10*time.Second)
	pgAddr := d.wait(t, rePgPort, time.Minute)
	promURL := d.wait(t, rePromURL, 2*time.Minute)
	page := d.wait(t, reIncident, 4*time.Minute)
	token := d.wait(t, reToken, time.Second)
	base := d.wait(t, reWL, time.Second)
	t.Logf("demo output:\n%s%s", d.stderr, d.stdout)

	var truth sim.Truth
	raw, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &truth); err != nil || truth.Category != "release" {
		t.Fatalf("truth.json: %v %+v", err, truth)
	}

	// The printed page is an incident's permalink; its analysis, read
	// through the API with the printed token, ranks the injected cause
	// first and names the released model and version.
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `/incidents/(\d+)$`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("incident page %q is not %s/incidents/{id}", page, base)
	}
	var an wire.Analysis
	getJSON(t, base+"/api/v1/incidents/"+m[1]+"/analysis", token, &an)
	if an.Status != "ready" || an.Result == nil || len(an.Causes) == 0 {
		t.Fatalf("analysis: %+v", an)
	}
	if c := an.Causes[0]; string(c.Category) != truth.Category || c.Target.Model != truth.Target.Model || c.Target.Version != truth.Target.Version {
		t.Fatalf("top cause %+v, injected %+v", c, truth)
	}
	var inc wire.Incident
	getJSON(t, base+"/api/v1/incidents/"+m[1], token, &inc)
	if inc.URL != page {
		t.Fatalf("API url %q, printed %q", inc.URL, page)
	}
	// The share link shows the page without signing in.
	share := d.wait(t, reShare, time.Second)
	res, err := http.Get(share)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("share link %s: %d %s", share, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(d.stdout.String(), "ranked first") {
		t.Fatalf("summary does not say the injected cause ranked first:\n%s", d.stdout)
	}

	// The home page tells the truth: the pulled history's spikes are
	// recorded, the injected one among them.
	conn, err := pgx.Connect(context.Background(), "postgres://postgres@"+pgAddr+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	var recorded int
	err = conn.QueryRow(context.Background(), `SELECT count(*) FROM spikes WHERE model = $1 AND onset BETWEEN $2 AND $3`,
		truth.Target.Model, truth.Onset.Add(-5*time.Minute), truth.Onset.Add(5*time.Minute)).Scan(&recorded)
	conn.Close(context.Background())
	if err != nil || recorded == 0 {
		t.Errorf("no recorded spike of %s near the onset %s (%v): the home page's Recent spikes would be empty", truth.Target.Model, truth.Onset, err)
	}

	// Still serving until Ctrl-C.
	select {
	case err := <-d.done:
		t.Fatalf("demo returned before Ctrl-C: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := d.stop(); err != nil {
		t.Fatalf("demo after Ctrl-C: %v", err)
	}
	assertStopped(t, dir, pgAddr, promURL, base)
}

// TestDemoInterruptedDuringSetUpKeeps is Ctrl-C while the demo is still
// setting up, with -keep: whatever it had started is stopped, and its
// directory (Postgres data, TSDB, truth.json) stays.
func TestDemoInterruptedDuringSetUpKeeps(t *testing.T) {
	d := startDemo(t, "-small", "-keep", "-addr", "127.0.0.1:0")
	dir := d.wait(t, reWorkDir, 10*time.Second)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pgAddr := d.wait(t, rePgPort, time.Minute)
	promURL := d.wait(t, rePromURL, 2*time.Minute)
	if err := d.stop(); err != nil {
		t.Fatalf("demo after Ctrl-C: %v", err)
	}
	if strings.Contains(d.stdout.String(), "incident page") {
		t.Log("the demo finished before the interrupt; cleanup is still checked")
	}
	for _, p := range []string{"truth.json", "pg/data/PG_VERSION", "prometheus/tsdb"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("-keep: %v", err)
		}
	}
	if !strings.Contains(d.stderr.String(), "kept "+dir) {
		t.Errorf("-keep does not say where:\n%s", d.stderr)
	}
	assertStopped(t, "", pgAddr, promURL, "")
}

// assertStopped checks that the demo's directory is gone (unless dir is
// "") and nothing it started still listens.
func assertStopped(t *testing.T, dir, pgAddr, promURL, base string) {
	t.Helper()
	if _, err := os.Stat(dir); dir != "" && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("demo directory %s still there (%v)", dir, err)
	}
	if c, err := net.DialTimeout("tcp", pgAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("private Postgres still listening on %s", pgAddr)
	}
	for _, u := range []string{promURL + "/-/ready", base + "/healthz"} {
		if strings.HasPrefix(u, "/") {
			continue
		}
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			t.Errorf("%s still answers", u)
		}
	}
}

func getJSON(t *testing.T, url, token string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func TestDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "none"}, "-scenario: want one of"},
		{[]string{"-scenario", "meteor"}, "-scenario: want one of"},
		{[]string{"-addr", "8080"}, "-addr: want host:port"},
		{[]string{"extra"}, "unexpected arguments: extra"},
		{[]string{"-bogus"}, "flag provided but not defined"},
	} {
		err := run(context.Background(), append([]string{"demo"}, tc.args...), envMap(nil), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("demo %v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestStrongestSpike(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	sp := func(role correlate.Role, sev string, score float64, onset time.Duration) wire.ListedSpike {
		return wire.ListedSpike{Spike: wire.Spike{Role: role, Severity: sev, Score: score, Onset: t0.Add(onset)}}
	}
	spikes := []wire.ListedSpike{
		sp("latency_p99", "page", 50, 10*time.Minute), // during the warm-up: ignored
		sp("latency_p50", "page", 30, time.Hour),
		sp("latency_p99", "ticket", 40, time.Hour),
		sp("latency_p99", "page", 8, time.Hour),
		sp("latency_p95", "page", 20, time.Hour),
	}
	got := strongest(spikes, t0.Add(warmUp))
	if got == nil || got.Role != "latency_p99" || got.Severity != "page" || got.Score != 8 {
		t.Fatalf("strongest = %+v, want the paging P99 spike after the warm-up", got)
	}
	if strongest(spikes[:1], t0.Add(warmUp)) != nil {
		t.Fatal("a spike inside the warm-up was picked")
	}
}

// The admin token a demo prints is for that run: against a DATABASE_URL
// the demo does not own, it stayed live after Ctrl-C.
func TestDemoRevokesItsTokenAtExit(t *testing.T) {
	dbURL := storetest.NewDatabase(t)
	d := &demo{opts: demoOptions{addr: "127.0.0.1:0"}, env: envMap(map[string]string{"DATABASE_URL": dbURL}),
		stdout: io.Discard, stderr: io.Discard, p: newProgress(io.Discard, 1), dir: t.TempDir()}
	s, err := d.serveWith(context.Background(), dbURL, "", map[string]string{"WATERLINE_PULL_INTERVAL": "0", "WATERLINE_DETECT_INTERVAL": "0"}, "")
	if err != nil {
		d.cleanup()
		t.Fatal(err)
	}
	var list struct {
		Incidents []wire.Incident `json:"incidents"`
	}
	getJSON(t, s.base+"/api/v1/incidents", s.token, &list) // the token works while the demo runs
	d.cleanup()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var live int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM api_tokens WHERE name = 'demo' AND revoked_at IS NULL`).Scan(&live); err != nil || live != 0 {
		t.Fatalf("%d demo tokens still live after the demo stopped (%v)", live, err)
	}
}

// A DATABASE_URL the demo cannot reach fails at the postgres step, not
// after the fleet was simulated and backfilled (a minute later).
func TestDemoChecksDatabaseURLFirst(t *testing.T) {
	var stderr syncbuf.Buffer
	err := run(context.Background(), []string{"demo", "-small", "-addr", "127.0.0.1:0"},
		envMap(map[string]string{"DATABASE_URL": "postgres://u:S3cret@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=2"}), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "connect to Postgres") || strings.Contains(err.Error(), "S3cret") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(stderr.String(), "simulat") {
		t.Errorf("the demo simulated the fleet before checking the database:\n%s", stderr.String())
	}
}
