package correlate

import (
	"testing"
	"time"
)

// Two of four models slow down because their downstream call does, with
// the gateway, auth and route times measured and flat: ingress is argued
// against by where the growth is, not left at the score its generic
// evidence (nothing local, several models) would give it.
func TestIngressIsArguedAgainstByGrowthBehindTheFront(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"a", "b", "c", "d"} {
		slow := m == "a" || m == "b"
		during := 100.0
		if slow {
			during = 400
		}
		x.p99(m, 100, during)
		x.sampleRun(10, Scope{Model: m, Version: "v1"}, 100, during, func(s *Sample, d bool) {
			for st := range s.StagesMs {
				s.StagesMs[st] = 100.0 / float64(NumStages)
			}
			s.StagesMs[StageDownstream] += s.TotalMs - 100
		})
	}
	a := Analyze(Input{
		Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: x.curves, Samples: x.samples, Step: time.Minute,
	})
	for _, c := range a.Causes {
		if c.Category != CatIngress {
			continue
		}
		found := false
		for _, e := range c.CounterEvidence {
			found = found || e.Name == "growth_behind_the_front"
		}
		if !found || c.Score > 0.1 {
			t.Errorf("ingress scored %.2f, counter-evidence %+v; want growth_behind_the_front and ≤ 0.1", c.Score, c.CounterEvidence)
		}
		return
	}
	t.Fatalf("no ingress cause in %+v", a.Causes)
}

// "No replica or node stands out" tells fleet-wide causes from local ones,
// not one fleet-wide cause from another: a downstream cause whose stage did
// not grow gets nothing from it (it alone kept such a cause at 0.10).
func TestNotLocalOnlyCorroborates(t *testing.T) {
	x := newFixture()
	for _, m := range []string{"a", "b"} {
		x.p99(m, 100, 400)
		x.sampleRun(10, Scope{Model: m, Version: "v1", Replica: m + "-1"}, 100, 400, func(s *Sample, d bool) {
			for st := range s.StagesMs {
				s.StagesMs[st] = 100.0 / float64(NumStages)
			}
			s.StagesMs[StageExec] += s.TotalMs - 100
		})
		x.sampleRun(10, Scope{Model: m, Version: "v1", Replica: m + "-2"}, 100, 400, nil)
	}
	a := Analyze(Input{
		Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: x.curves, Samples: x.samples, Step: time.Minute,
	})
	for _, c := range a.Causes {
		if c.Category == CatDownstream {
			for _, e := range c.Evidence {
				if e.Name == "not_local" {
					t.Errorf("downstream without growth lists not_local: %+v (score %.2f)", e, c.Score)
				}
			}
			return
		}
	}
	t.Fatalf("no downstream cause in %+v", a.Causes)
}

// Load piled onto one replica makes its batches bigger and its queue
// longer: with the batch wait measured and flat, batching is argued
// against by where the growth is, and its summary says the batches grew,
// not that "batching changed" (no config change says so).
func TestBatchingIsArguedAgainstByGrowthInTheQueue(t *testing.T) {
	x := newFixture()
	x.p99("m", 100, 400)
	x.curve(RoleBatchSize, LevelModel, Scope{Model: "m"}, 1.2, 2.5)
	x.sampleRun(10, Scope{Model: "m", Version: "v1"}, 100, 400, func(s *Sample, d bool) {
		for st := range s.StagesMs {
			s.StagesMs[st] = 100.0 / float64(NumStages)
		}
		s.StagesMs[StageQueue] += s.TotalMs - 100
	})
	a := Analyze(Input{
		Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: x.curves, Samples: x.samples, Step: time.Minute,
	})
	for _, c := range a.Causes {
		if c.Category != CatBatching {
			continue
		}
		against := false
		for _, e := range c.CounterEvidence {
			against = against || e.Name == "growth_elsewhere"
		}
		if !against || c.Score > 0.1 {
			t.Errorf("batching scored %.2f, counter-evidence %+v; want growth_elsewhere and ≤ 0.1", c.Score, c.CounterEvidence)
		}
		if want := "m's batches grew, but waiting for batches explains only 0% of the tail's growth."; c.Summary != want {
			t.Errorf("summary %q, want %q", c.Summary, want)
		}
		return
	}
	t.Fatalf("no batching cause in %+v", a.Causes)
}
