package correlate

import (
	"math"
	"strings"
	"testing"
)

// samplesAnswer is the analysis' samples step.
func samplesAnswer(t *testing.T, a Analysis) string {
	t.Helper()
	for _, st := range a.Checklist {
		if st.Step == "samples" {
			return st.Answer
		}
	}
	t.Fatal("no samples step")
	return ""
}

// During the spike a quarter of chat's requests generate eight times the
// tokens: the slow requests are the long ones, and the samples step says
// so, with the figures; the output tokens' bucket is where slow requests
// concentrate.
func TestSlowRequestsThatAreTheLongOnesAreSaidToBe(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 300)
	x.sampleRun(20, Scope{Model: "chat", Replica: "chat-0"}, 100, 100, func(s *Sample, during bool) {
		s.InputTokens, s.OutputTokens = 500, 200
		if during && len(x.samples)%4 == 0 {
			s.OutputTokens = 1600
			s.TotalMs *= 8
		}
	})
	a := x.analyze()
	tk := a.Samples.Tokens
	if tk == nil || tk.SlowOutputTokens != 1600 || tk.OtherOutputTokens != 200 {
		t.Fatalf("tokens %+v, want slow 1600 against 200", tk)
	}
	ans := samplesAnswer(t, a)
	// No request of that length before the onset: whether the servers
	// slowed too is not said.
	if !strings.Contains(ans, "The slow requests were the long ones: a median of 1600 generated tokens against 200 for the others (×8.0); no request of that length was sampled before the onset") ||
		strings.Contains(ans, "servers' speed") {
		t.Errorf("samples step: %s", ans)
	}
	found := false
	for _, c := range a.Concentration {
		if c.Dims["output_tokens"] == "1025-2048" {
			found = true
		}
	}
	if !found {
		t.Errorf("no concentration on output_tokens 1025-2048: %+v", a.Concentration)
	}
}

// The slow requests generate as many tokens as the others: their length
// does not explain them, and the step says that; samples without counts
// say nothing of tokens.
func TestSlowRequestsOfUsualLengthAreNotBlamedOnLength(t *testing.T) {
	x := newFixture()
	x.p99("chat", 100, 300)
	x.sampleRun(20, Scope{Model: "chat", Replica: "chat-0"}, 100, 100, func(s *Sample, during bool) {
		s.OutputTokens = 200 + len(x.samples)%7
		if during && len(x.samples)%4 == 0 {
			s.TotalMs *= 4
		}
	})
	ans := samplesAnswer(t, x.analyze())
	if !strings.Contains(ans, "The slow requests were no longer than the others") || !strings.Contains(ans, "their length does not explain them") {
		t.Errorf("samples step: %s", ans)
	}
	for i := range x.samples {
		x.samples[i].OutputTokens = 0
	}
	a := x.analyze()
	if a.Samples.Tokens != nil || strings.Contains(samplesAnswer(t, a), "tokens") {
		t.Errorf("samples without counts: %+v, %s", a.Samples.Tokens, samplesAnswer(t, a))
	}
}

// Two affected models: chat's answers are twenty times as long as
// short's, and chat has a larger share of slow requests. Within each
// model the slow requests are as long as the others and three to four
// times slower per token; pooled, the slow requests would read as "the
// long ones, at the usual time per token" — a difference of models, not
// of lengths. The comparison is within one model, and names it.
func TestSlowRequestsAreComparedWithinTheirModel(t *testing.T) {
	x := newFixture()
	x.p99("chat", 1000, 4000)
	x.p99("short", 200, 600)
	x.sampleRun(20, Scope{Model: "chat", Replica: "chat-0"}, 1000, 1000, func(s *Sample, during bool) {
		s.OutputTokens = 2000
		if during && len(x.samples)%2 == 0 {
			s.TotalMs *= 4
		}
	})
	x.sampleRun(20, Scope{Model: "short", Replica: "short-0"}, 200, 200, func(s *Sample, during bool) {
		s.OutputTokens = 100
		if during && len(x.samples)%10 == 0 {
			s.TotalMs *= 3
		}
	})
	a := x.analyze()
	ans := samplesAnswer(t, a)
	if strings.Contains(ans, "the long ones") || strings.Contains(ans, "×20.0") {
		t.Errorf("the models' lengths read as the slow requests': %s", ans)
	}
	tk := a.Samples.Tokens
	if tk == nil || tk.Model != "chat" || tk.SlowOutputTokens != 2000 || tk.OtherOutputTokens != 2000 {
		t.Fatalf("tokens %+v, want chat's, 2000 against 2000", tk)
	}
	if !strings.Contains(ans, "The slow requests of chat were no longer than the others") {
		t.Errorf("samples step: %s", ans)
	}
}

// Whether the servers also slowed is judged against requests of the slow
// ones' length before the onset (here every 120th, under 1 %: not slow
// by the P99 before), never against the spike's other requests, which a
// slowdown reaches too; in the band between "held" and "slower" no
// verdict on speed is given.
func TestTimePerTokenIsJudgedAgainstRequestsOfThatLengthBefore(t *testing.T) {
	for _, c := range []struct {
		slowTotal    float64 // the long requests' total during the spike, × the short ones'
		want, forbid string
	}{
		{8, "at no more time per token than before (0.5 ms against 0.5 ms for requests of that length before the onset): their length, not the servers' speed, sets them apart", ""},
		{2, "at no more time per token than before (0.1 ms against 0.5 ms", ""},
		{8 * 1.2, "at somewhat more time per token (0.6 ms against 0.5 ms for requests of that length before the onset).", "servers' speed"},
		{16, "and slower per token too (1 ms against 0.5 ms for requests of that length before the onset): their length explains only part of it", "servers' speed"},
	} {
		x := newFixture()
		x.p99("chat", 100, 300)
		x.sampleRun(20, Scope{Model: "chat", Replica: "chat-0"}, 100, 100, func(s *Sample, during bool) {
			s.OutputTokens = 200
			switch {
			case !during && len(x.samples)%120 == 0:
				s.OutputTokens = 1600
				s.TotalMs *= 8
			case during && len(x.samples)%4 == 0:
				s.OutputTokens = 1600
				s.TotalMs *= c.slowTotal
			}
		})
		a := x.analyze()
		ans := samplesAnswer(t, a)
		if !strings.Contains(ans, c.want) || c.forbid != "" && strings.Contains(ans, c.forbid) {
			t.Errorf("long requests at ×%g the total: want %q, got %s", c.slowTotal, c.want, ans)
		}
		if tk := a.Samples.Tokens; tk == nil || tk.Before < 10 || math.Abs(tk.BeforeMsPerToken-0.5) > 0.01 {
			t.Errorf("the reference: %+v", tk)
		}
	}
}
