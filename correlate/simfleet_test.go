package correlate_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/sim"
)

// simCase is one simulated incident as the analysis receives it after a
// pull: the fleet's curves, pushed and derived events, samples, and the
// incident window the replay tests open (90 minutes before the true onset
// to 45 minutes after).
type simCase struct {
	fleet *sim.Fleet
	truth sim.Truth
	input correlate.Input
}

// goldenOptions are the fleets the golden analyses and the category tests
// share: the default four-model fleet with innocent changes around the
// onset, two hours long, at half the catalog's traffic (the same shape,
// generated in a second or two).
func goldenOptions(sc sim.Scenario) sim.Options {
	return sim.Options{Seed: 21, Scenario: sc, Confounders: true, Duration: 120 * time.Minute, Onset: 85 * time.Minute, TrafficScale: 0.5}
}

var (
	simMu    sync.Mutex
	simCache = map[sim.Scenario]*simOnce{}
)

type simOnce struct {
	once sync.Once
	c    *simCase
	err  error
}

// simulated returns the golden fleet of a scenario, generated once per test
// binary (tests of several files read the same fleets).
func simulated(t testing.TB, sc sim.Scenario) *simCase {
	t.Helper()
	simMu.Lock()
	e := simCache[sc]
	if e == nil {
		e = &simOnce{}
		simCache[sc] = e
	}
	simMu.Unlock()
	e.once.Do(func() { e.c, e.err = newSimCase(goldenOptions(sc)) })
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.c
}

func newSimCase(o sim.Options) (*simCase, error) {
	f, err := sim.New(o)
	if err != nil {
		return nil, err
	}
	c := &simCase{fleet: f, truth: f.Truth()}
	d := f.Description()
	onset := d.Start.Add(o.Onset)
	if c.truth.Onset != nil {
		onset = *c.truth.Onset
	}
	end := onset.Add(45 * time.Minute)
	if end.After(d.End) {
		end = d.End
	}
	in := correlate.Input{
		Window: correlate.Window{From: onset.Add(-90 * time.Minute), To: end},
		Curves: f.Curves(),
		Events: append(f.Events(), f.KubeEvents()...),
		Step:   o.Step,
	}
	if in.Step == 0 {
		in.Step = 15 * time.Second
	}
	for s := range f.Samples() {
		in.Samples = append(in.Samples, s)
	}
	slices.SortStableFunc(in.Events, func(a, b correlate.Event) int { return a.Time.Compare(b.Time) })
	c.input = in
	return c, nil
}

// clone returns a copy of the case's input whose slices the caller may
// change.
func (c *simCase) clone() correlate.Input {
	in := c.input
	in.Curves = make([]correlate.Curve, len(c.input.Curves))
	for i, cv := range c.input.Curves {
		cv.Points = slices.Clone(cv.Points)
		in.Curves[i] = cv
	}
	in.Events = slices.Clone(c.input.Events)
	in.Samples = slices.Clone(c.input.Samples)
	return in
}
