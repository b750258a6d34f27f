package sim

import (
	"time"
)

// ModelInfo describes one model of the fleet as scenario.json lists it.
type ModelInfo struct {
	Name       string  `json:"name"`
	Tier       string  `json:"tier"`
	Entry      string  `json:"entry"`
	SLOMs      float64 `json:"slo_ms"`
	Version    string  `json:"version"` // at the window start
	Replicas   int     `json:"replicas"`
	Downstream string  `json:"downstream,omitempty"`
	MaxBatch   int     `json:"max_batch"`
	WindowMs   float64 `json:"batch_window_ms"`
}

// Description is the fleet and window of a simulation: what a bundle's
// scenario.json holds.
type Description struct {
	Name        string      `json:"name"`
	Scenario    Scenario    `json:"scenario"`
	Seed        int64       `json:"seed"`
	Start       time.Time   `json:"start"`
	End         time.Time   `json:"end"` // the last scrape
	StepSeconds int         `json:"step_seconds"`
	Namespace   string      `json:"namespace"`
	Models      []ModelInfo `json:"models"`
	Nodes       []string    `json:"nodes"`
	Tenants     []string    `json:"tenants"`
	Samples     int         `json:"samples"`
	Events      int         `json:"events"`
}

// Description returns the fleet's layout. Samples is only known after the
// simulation, which this runs if needed.
func (f *Fleet) Description() Description {
	d := Description{
		Name:        "sim-" + string(f.opts.Scenario),
		Scenario:    f.opts.Scenario,
		Seed:        f.seed,
		Start:       f.opts.Start,
		End:         f.at(f.stepTime(f.nSteps - 1)),
		StepSeconds: int(f.step),
		Namespace:   namespace,
		Tenants:     append([]string(nil), f.tenants...),
		Samples:     f.SampleCount(),
		Events:      len(f.events),
	}
	for _, m := range f.models {
		mi := ModelInfo{
			Name: m.spec.name, Tier: m.spec.tier, Entry: m.spec.entry,
			SLOMs: m.spec.slo * 1000, Version: m.version, Replicas: m.replicas,
			MaxBatch: m.spec.maxBatch, WindowMs: m.spec.window * 1000,
		}
		if m.spec.calls {
			mi.Downstream = dependencyName
		}
		d.Models = append(d.Models, mi)
	}
	for _, n := range f.nodes {
		d.Nodes = append(d.Nodes, n.name)
	}
	return d
}

// Options returns the normalised options the fleet was built from.
func (f *Fleet) Options() Options { return f.opts }
