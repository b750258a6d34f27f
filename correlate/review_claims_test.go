package correlate

// Sentences found in replayed incident bundles whose figures did not
// back them: each test rebuilds the shape by hand and checks the claim.

import (
	"strings"
	"testing"
	"time"
)

// A new version took traffic with the spike and its deploy event was
// pushed — minutes after the onset (bundles 03, 08, 12): the release
// evidence said "(no deploy event was pushed)" beside its own
// "deploy came 4m15s after the onset".
func TestReleaseLateDeployIsNotUnpushed(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, func(s *Sample, d bool) {
		if d && s.Time.Second()%2 == 0 {
			s.Version = "v2"
		}
	})
	x.events = []Event{{ID: "dep", Kind: KindDeploy, Time: x.onset.Add(5 * time.Minute), Scope: Scope{Model: "m", Version: "v2"}, Summary: "rollout m v1 -> v2"}}
	c := causeOf(t, x.analyze(), CatRelease)
	dumpCause(t, c)
	if !names(c.Evidence)["new_version_took_traffic"] {
		t.Fatal("the shape no longer yields new_version_took_traffic")
	}
	for _, s := range saidBy(c) {
		if strings.Contains(s, "no deploy event was pushed") {
			t.Errorf("%q, yet a deploy of m (to v2) was pushed 5m after the onset", s)
		}
	}
}
