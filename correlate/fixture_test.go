package correlate

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// fxStart is the start of the hand-made fixtures of scope_test.go and
// facts_test.go: 100 minutes at one point a minute, the onset at minute 70,
// the spike's main part 20 minutes long.
var fxStart = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

const fxMinutes = 100

// fixture collects curves and samples around one onset.
type fixture struct {
	onset   time.Time
	ph      phases
	curves  []Curve
	samples []Sample
	events  []Event
}

func newFixture() *fixture {
	onset := fxStart.Add(70 * time.Minute)
	return &fixture{onset: onset, ph: newPhases(onset, onset.Add(20*time.Minute), fxStart, fxStart.Add(fxMinutes*time.Minute))}
}

// wobble is a deterministic ±1 % ripple, so that robust spreads are not zero.
func wobble(i int) float64 { return 1 + 0.01*math.Sin(1.7*float64(i)) }

// curve adds a curve at before until the onset and at during after it
// (one point a minute, rippled); a NaN before starts the curve at the onset.
func (x *fixture) curve(role Role, level Level, sc Scope, before, during float64) *Curve {
	c := Curve{Role: role, Level: level, Scope: sc}
	for i := 0; i < fxMinutes; i++ {
		t := fxStart.Add(time.Duration(i) * time.Minute)
		v := before
		if !t.Before(x.onset) {
			v = during
		}
		if math.IsNaN(v) {
			continue
		}
		c.Points = append(c.Points, Point{T: t.UnixMilli(), V: v * wobble(i)})
	}
	x.curves = append(x.curves, c)
	return &x.curves[len(x.curves)-1]
}

// sample adds n samples of one scope per minute over the fixture, each
// taking the given total before and during the onset (rippled), with the
// stage times spread evenly unless stages says otherwise.
func (x *fixture) sampleRun(n int, sc Scope, before, during float64, edit func(s *Sample, during bool)) {
	for i := 0; i < fxMinutes; i++ {
		for k := 0; k < n; k++ {
			t := fxStart.Add(time.Duration(i)*time.Minute + time.Duration(k)*time.Second)
			d := !t.Before(x.onset)
			total := before
			if d {
				total = during
			}
			s := Sample{RequestID: fmt.Sprintf("%s-%d-%d-%d", sc.Replica+sc.Model, len(x.samples), i, k), Time: t,
				Model: sc.Model, Version: sc.Version, Tenant: sc.Tenant, Replica: sc.Replica, Node: sc.Node,
				Status: "ok", TotalMs: total * wobble(i*7+k), SampleRate: 1}
			for st := range s.StagesMs {
				s.StagesMs[st] = s.TotalMs / float64(NumStages)
			}
			if edit != nil {
				edit(&s, d)
			}
			x.samples = append(x.samples, s)
		}
	}
}

// facts builds the analysis facts of the fixture, as Analyze does.
func (x *fixture) facts() *facts {
	cs := newCurveSet(x.curves)
	started := replicaStarts(x.events, cs, x.ph.BeforeFrom, time.Minute)
	ss := newSampleSet(x.samples, x.ph, func(string) (float64, bool) { return 0, false }, started)
	return newFacts(cs, ss, x.ph, started, Scope{})
}

// p99 adds model-level P99 curves.
func (x *fixture) p99(model string, before, during float64) { x.p99c(model, before, during) }

// p99c is p99, returning the curve added.
func (x *fixture) p99c(model string, before, during float64) *Curve {
	return x.curve(RoleLatencyP99, LevelModel, Scope{Model: model}, before, during)
}

// replica adds a replica's P99 and QPS curves.
func (x *fixture) replica(model, rep, node string, before, during, qpsBefore, qpsDuring float64) {
	sc := Scope{Model: model, Version: "v1", Replica: rep, Node: node}
	x.curve(RoleLatencyP99, LevelReplica, sc, before, during)
	x.curve(RoleQPS, LevelReplica, sc, qpsBefore, qpsDuring)
}

// analyze runs Analyze over the fixture, from five minutes before the
// onset to its end, at its one-minute step.
func (x *fixture) analyze() Analysis {
	return Analyze(Input{
		Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
		Curves: x.curves, Events: x.events, Samples: x.samples, Step: time.Minute,
	})
}

// stagedRun adds samples whose growth during the spike is all in one stage.
func (x *fixture) stagedRun(n int, sc Scope, during float64, stage Stage) {
	x.sampleRun(n, sc, 100, during, func(s *Sample, _ bool) {
		for st := range s.StagesMs {
			s.StagesMs[st] = 100.0 / float64(NumStages)
		}
		s.StagesMs[stage] += s.TotalMs - 100
	})
}

// causeOf is an analysis' cause of one category.
func causeOf(t *testing.T, a Analysis, cat Category) Cause {
	t.Helper()
	for _, c := range a.Causes {
		if c.Category == cat {
			return c
		}
	}
	t.Fatalf("no %s cause in %+v", cat, a.Causes)
	return Cause{}
}

// names are the names of evidence items.
func names(items []Evidence) map[string]bool {
	out := map[string]bool{}
	for _, e := range items {
		out[e.Name] = true
	}
	return out
}

// evidenceNamed is a cause's evidence or counter-evidence item of that
// name, or nil.
func evidenceNamed(c Cause, name string) *Evidence {
	for _, items := range [][]Evidence{c.Evidence, c.CounterEvidence} {
		for i := range items {
			if items[i].Name == name {
				return &items[i]
			}
		}
	}
	return nil
}

// allEvidence is a cause's evidence and counter-evidence, in one new slice.
func allEvidence(c Cause) []Evidence {
	return append(append([]Evidence{}, c.Evidence...), c.CounterEvidence...)
}
