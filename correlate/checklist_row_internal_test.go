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
		st := samplesStep(a, &facts{affected: []string{"chat"}}, &Cause{Category: CatCapacity, Target: c.target})
		if st.Fallback != c.fallback || !strings.Contains(st.Answer, RowLead(c.fallback, true)+" model=rank") {
			t.Errorf("%s: fallback %v, answer %q", c.name, st.Fallback, st.Answer)
		}
	}
}

// A tenant sending most slow requests is news only when it sends more of
// them than of the requests.
func TestTenantSentenceWeighsTheTenantsTraffic(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		e    ScopeEntry
		want string
	}{
		{ScopeEntry{Name: "t-a", SlowShare: f(0.8), TrafficShare: f(0.3)}, "Tenant t-a sends 80% of m's slow requests against 30% of its requests."},
		{ScopeEntry{Name: "t-a", SlowShare: f(0.62), TrafficShare: f(0.6)}, "Tenant t-a sends 62% of m's slow requests, in line with its 60% of the requests."},
		{ScopeEntry{Name: "t-a", SlowShare: f(0.62)}, "Tenant t-a sends 62% of m's slow requests."},
	} {
		if got := tenantSentence(tc.e, "m"); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// No row matches the top cause and none undoes any of the P99's rise: the
// step quoted the table's first row as "the row explaining most of the
// tail" (ingress demo, seed 2: 7% of the slow requests, its tail "—").
func TestSamplesStepFallbackRowExplainingNothing(t *testing.T) {
	t.Parallel()
	a := Analysis{Samples: SampleSummary{Total: 100},
		Concentration: []Concentration{{Dims: map[string]string{"batch_size": "2"}, Label: "batch_size=2", SelectionPct: 7, BaselinePct: 1, RiskRatio: 3.6}}}
	st := samplesStep(a, &facts{affected: []string{"chat"}}, &Cause{Category: CatIngress, Target: Target{Models: []string{"chat"}}})
	if !st.Fallback || strings.Contains(st.Answer, "explaining most of the tail") || !strings.Contains(st.Answer, RowLead(true, false)+" batch_size=2") {
		t.Errorf("fallback %v, answer %q", st.Fallback, st.Answer)
	}
}

// A row over two models: "undoes 96% of chat-8b, embed-small's P99 rise"
// (local_replica demo) left the list hanging on a possessive; the share
// is of their requests pooled.
func TestSamplesStepTailOfSeveralModels(t *testing.T) {
	t.Parallel()
	a := Analysis{Samples: SampleSummary{Total: 100},
		Concentration: []Concentration{{Dims: map[string]string{"node": "n1"}, Label: "node=n1", SelectionPct: 98, BaselinePct: 22, RiskRatio: 94, TailShare: 0.96, Models: []string{"chat-8b", "embed-small"}}}}
	st := samplesStep(a, &facts{affected: []string{"chat-8b", "embed-small"}}, &Cause{Category: CatLocalReplica, Target: Target{Node: "n1"}})
	if want := "undoes 96% of the P99 rise of the requests of chat-8b and embed-small taken together."; !strings.Contains(st.Answer, want) {
		t.Errorf("answer %q, want %q", st.Answer, want)
	}
}
