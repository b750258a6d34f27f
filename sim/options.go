package sim

import (
	"fmt"
	"time"
)

// Scenario names the root cause a simulation injects. The values are the
// cause categories of DESIGN §5, plus None.
type Scenario string

// The scenarios the simulator can inject.
const (
	None         Scenario = "none"
	Release      Scenario = "release"
	Capacity     Scenario = "capacity"
	LocalReplica Scenario = "local_replica"
	Batching     Scenario = "batching"
	ColdStart    Scenario = "cold_start"
	Downstream   Scenario = "downstream"
	Routing      Scenario = "routing"
	Ingress      Scenario = "ingress"
)

// Scenarios lists every scenario, incidents first.
var Scenarios = []Scenario{Release, Capacity, LocalReplica, Batching, ColdStart, Downstream, Routing, Ingress, None}

// ParseScenario maps a name ("cold_start") onto a Scenario.
func ParseScenario(s string) (Scenario, error) {
	for _, v := range Scenarios {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown scenario %q (want one of release, capacity, local_replica, batching, cold_start, downstream, routing, ingress, none)", s)
}

// DefaultStart is the window start used when Options.Start is zero. It is a
// fixed instant so that a zero Options is fully deterministic; the demo
// passes a recent time instead.
var DefaultStart = time.Date(2026, 1, 5, 6, 0, 0, 0, time.UTC)

// Options describe the fleet, the window and the injected cause. The zero
// value is a valid 3 h default fleet with no incident.
type Options struct {
	// Seed makes every random choice; the same Options give the same bytes.
	Seed int64
	// Start of the window (truncated to Step); zero means DefaultStart.
	Start time.Time
	// Duration of the window; default 3 h.
	Duration time.Duration
	// Step is the scrape interval of the metrics; default 15 s.
	Step time.Duration

	// Scenario is the injected root cause; empty means None.
	Scenario Scenario
	// Target names what the cause hits: a model (release, capacity,
	// batching, cold_start, routing) or a node (local_replica). Empty: a
	// seeded choice among the fleet's eligible models or nodes. Ignored by
	// downstream (every caller of the dependency) and ingress (everything).
	Target string
	// Onset is the offset from Start at which the cause is set off (the
	// deploy, the config push, the first extra traffic). Zero: about two
	// thirds into the window, with a seeded jitter of a few minutes.
	Onset time.Duration
	// Strength scales the effect: 1 is a clear incident (default), 0.5 a
	// weak one, 2 a severe one. Load-driven causes (capacity, routing) read
	// it as how close to saturation the hot pool is pushed.
	Strength float64
	// EffectDuration ends the cause after this long (a rollback, a revert,
	// the surge stopping, the node recovering). Zero: it lasts to the end.
	// Cold starts end by themselves when the new replicas are warm.
	EffectDuration time.Duration
	// Confounders adds innocent changes around the onset: a deploy of
	// another model, an unrelated feature-flag change, a harmless route
	// tweak, a pre-warmed scale-up of another model.
	Confounders bool
	// HideCauseEvent drops the pushed event of the real cause (the CD
	// system never told us), where the cause has one.
	HideCauseEvent bool

	// Models is how many models of the built-in catalog run (1..6,
	// default 4).
	Models int
	// ReplicasPerModel overrides each model's replica count (default: the
	// catalog's, 2–3).
	ReplicasPerModel int
	// Nodes is the number of GPU nodes (default 6, at least enough GPUs
	// for every replica plus a rollout's surge).
	Nodes int
	// Tenants is the number of tenants (1..8, default 5).
	Tenants int
	// TrafficScale multiplies every request rate (default 1). Lower it to
	// make small, fast fixtures.
	TrafficScale float64

	// HeadSampleEvery keeps 1 in N of the requests under the SLO. Zero
	// picks N per model so that each model keeps about one such sample per
	// second.
	HeadSampleEvery int
	// TailSampleEvery keeps 1 in N of the requests over the model's SLO
	// (default 2). Head N is rounded to a multiple of it.
	TailSampleEvery int
}

// Small returns options for a fast fixture: 30 minutes, two models with two
// replicas on three nodes at 70 % of the catalog's traffic (two replicas
// carry what three do in the default fleet), the cause set off 20 minutes
// in. Generating it takes well under a second.
func Small(seed int64, sc Scenario) Options {
	return Options{
		Seed:             seed,
		Duration:         30 * time.Minute,
		Scenario:         sc,
		Onset:            20 * time.Minute,
		Models:           2,
		ReplicasPerModel: 2,
		Nodes:            3,
		Tenants:          4,
		TrafficScale:     0.7,
	}
}

// normalize fills defaults and checks ranges.
func (o Options) normalize() (Options, error) {
	if o.Step == 0 {
		o.Step = 15 * time.Second
	}
	if o.Step < time.Second || o.Step%time.Second != 0 {
		return o, fmt.Errorf("step %v: want whole seconds, at least 1s", o.Step)
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	o.Start = o.Start.UTC().Truncate(o.Step)
	if o.Duration == 0 {
		o.Duration = 3 * time.Hour
	}
	if o.Duration < 20*o.Step {
		return o, fmt.Errorf("duration %v: want at least 20 steps", o.Duration)
	}
	if o.Scenario == "" {
		o.Scenario = None
	}
	if _, err := ParseScenario(string(o.Scenario)); err != nil {
		return o, err
	}
	if o.Onset < 0 || o.Onset >= o.Duration {
		return o, fmt.Errorf("onset %v: want within the %v window", o.Onset, o.Duration)
	}
	if o.Strength == 0 {
		o.Strength = 1
	}
	if o.Strength < 0.05 || o.Strength > 5 {
		return o, fmt.Errorf("strength %v: want 0.05..5", o.Strength)
	}
	if o.EffectDuration < 0 {
		return o, fmt.Errorf("effect duration %v: want ≥ 0", o.EffectDuration)
	}
	if o.Models == 0 {
		o.Models = 4
	}
	if o.Models < 1 || o.Models > len(catalog) {
		return o, fmt.Errorf("models %d: want 1..%d", o.Models, len(catalog))
	}
	if o.ReplicasPerModel < 0 || o.ReplicasPerModel > 8 {
		return o, fmt.Errorf("replicas per model %d: want 1..8", o.ReplicasPerModel)
	}
	if o.Nodes == 0 {
		o.Nodes = 6
	}
	if o.Nodes < 1 || o.Nodes > 32 {
		return o, fmt.Errorf("nodes %d: want 1..32", o.Nodes)
	}
	if o.Tenants == 0 {
		o.Tenants = 5
	}
	if o.Tenants < 1 || o.Tenants > len(tenantNames) {
		return o, fmt.Errorf("tenants %d: want 1..%d", o.Tenants, len(tenantNames))
	}
	if o.TrafficScale == 0 {
		o.TrafficScale = 1
	}
	if o.TrafficScale < 0.01 || o.TrafficScale > 20 {
		return o, fmt.Errorf("traffic scale %v: want 0.01..20", o.TrafficScale)
	}
	if o.TailSampleEvery == 0 {
		o.TailSampleEvery = 2
	}
	if o.TailSampleEvery < 1 || o.HeadSampleEvery < 0 {
		return o, fmt.Errorf("sample rates: want ≥ 1")
	}
	return o, nil
}
