package diagnose_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/waterline-dev/waterline/internal/testing/vmtest"
)

// TestReplayPublicBundleFromVictoriaMetrics replays one shared bundle as
// TestReplayPublicBundles does, but with its metrics in VictoriaMetrics
// (single node, Debian's package) instead of Prometheus: the puller reads
// them through the Prometheus query API VictoriaMetrics serves, and the
// analysis must still find the spike and rank the right cause first.
func TestReplayPublicBundleFromVictoriaMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("a replay of a whole incident bundle: -short leaves it out (make test runs it in a pass of its own, without -race)")
	}
	t.Parallel()
	dir := os.Getenv("WATERLINE_SCENARIOS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "scenarios")
	}
	bdir := filepath.Join(dir, "01-release")
	if _, err := os.Stat(filepath.Join(bdir, "metrics.om.gz")); err != nil {
		t.Skipf("shared incident bundle 01-release not found in %s (set WATERLINE_SCENARIOS): %v", dir, err)
	}
	replayFrom(t, loadBundle(t, bdir), func(t *testing.T, om io.Reader) string { return vmtest.Run(t, om).URL })
}
