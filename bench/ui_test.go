package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/sim"
)

// TestUIServe backs bench/ui.sh: with WATERLINE_UI_BENCH_DIR set, it
// replays a bundle (the shared 01-release when present, else a simulated
// release) through the real stack, opens its incident, signs in, writes
// the incident URL, the session cookie and the share URL into that folder,
// and serves until a file named "stop" appears there. Without the
// variable it is skipped: it is a fixture for the script, not a test.
func TestUIServe(t *testing.T) {
	dir := os.Getenv("WATERLINE_UI_BENCH_DIR")
	if dir == "" {
		t.Skip("set WATERLINE_UI_BENCH_DIR (bench/ui.sh does)")
	}
	b, ok := stacktest.DirBundle(t, filepath.Join(stacktest.ScenariosDir(), "01-release"))
	if !ok || os.Getenv("WATERLINE_UI_BENCH_SIM") != "" {
		b = stacktest.SimBundle(t, "sim-release", sim.Options{Seed: 3, Scenario: sim.Release, Duration: 3 * time.Hour,
			Onset: 120 * time.Minute})
	}
	start := time.Now()
	s := stacktest.Start(t, b, stacktest.Options{})
	id := s.Incident(t, "P99 up: "+b.Name)
	cookie := s.Login(t)
	share, err := s.Store.CreateShareLink(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bundle %s replayed in %v; top cause %s", b.Name, time.Since(start), s.TopCause(t, id))
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inc, err := s.Store.Incident(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	write("window", fmt.Sprintf("%d %d", inc.Start.Unix(), inc.End.Unix()))
	write("cookie", cookie)
	write("share", s.URL+"/s/"+share)
	write("bundle", b.Name)
	write("url", s.URL+"/incidents/"+itoa(int(id))) // last: the script waits for it
	deadline := time.Now().Add(20 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("no stop file within 20 minutes")
}
