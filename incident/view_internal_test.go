package incident

import (
	"testing"

	"github.com/waterline-dev/waterline/correlate"
)

// Without the samples' own thresholds a request is slow above the
// baseline P99; a baseline that is a mean or a P95 is no such line (half
// of a normal minute's requests are above its mean).
func TestSlowThresholdOnlyFromABaselineP99(t *testing.T) {
	for _, c := range []struct {
		quantile string
		want     float64
	}{{"P99", 400}, {"", 400}, {"P95", 0}, {"mean", 0}} {
		an := &correlate.Analysis{P99BeforeMs: 400, Impact: []correlate.Impact{{Model: "m", BaselineP99Ms: 400, Quantile: c.quantile}}}
		if c.quantile == "" {
			an.Impact = nil
		}
		if _, def := (View{Analysis: an}).SlowThresholds(); def != c.want {
			t.Errorf("baseline quantile %q: threshold %v, want %v", c.quantile, def, c.want)
		}
	}
	// The samples' thresholds win whatever the curves measured.
	an := &correlate.Analysis{P99BeforeMs: 20, Impact: []correlate.Impact{{Quantile: "mean"}},
		Samples: correlate.SampleSummary{SlowMs: map[string]float64{"m": 300}}}
	if m, def := (View{Analysis: an}).SlowThresholds(); def != 300 || m["m"] != 300 {
		t.Errorf("with samples: %v, %v", m, def)
	}
}
