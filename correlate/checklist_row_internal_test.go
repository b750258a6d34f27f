package correlate

import (
	"strings"
	"testing"
)

// The samples step records whether its row is the top cause's or only the
// one explaining most of the tail; a row of one of the target's models is
// the cause's.
func TestSamplesStepRecordsFallback(t *testing.T) {
	t.Parallel()
	a := Analysis{Samples: SampleSummary{Total: 100},
		Concentration: []Concentration{{Dims: map[string]string{"model": "rank"}, Label: "model=rank", SelectionPct: 60, BaselinePct: 20, TailShare: 0.5}}}
	for _, c := range []struct {
		name     string
		target   Target
		fallback bool
	}{
		{"one of the target's models", Target{Node: "n1", Models: []string{"chat", "rank"}}, false},
		{"another model", Target{Node: "n1", Models: []string{"chat"}}, true},
	} {
		st := samplesStep(a, &facts{}, &Cause{Category: CatCapacity, Target: c.target})
		if st.Fallback != c.fallback || !strings.Contains(st.Answer, RowLead(c.fallback)+" model=rank") {
			t.Errorf("%s: fallback %v, answer %q", c.name, st.Fallback, st.Answer)
		}
	}
}
