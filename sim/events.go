package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// Events returns the change events a CD system, a config service or the
// gateway's control plane would push, sorted by time: deploys, rollbacks,
// config and route changes. Scaling, pod starts, restarts and node
// conditions are never pushed; they are only in kube-state-metrics. IDs
// depend only on the options.
func (f *Fleet) Events() []correlate.Event {
	out := make([]correlate.Event, len(f.events))
	for i, e := range f.events {
		if e.Attrs != nil {
			a := make(map[string]any, len(e.Attrs))
			for k, v := range e.Attrs {
				a[k] = v
			}
			e.Attrs = a
		}
		out[i] = e
	}
	return out
}

// WriteEventsNDJSON writes Events as NDJSON, the body of POST
// /api/v1/events with Content-Type application/x-ndjson.
func (f *Fleet) WriteEventsNDJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, e := range f.Events() {
		in, err := wire.NewEventIn(e)
		if err != nil {
			return err
		}
		if err := enc.Encode(in); err != nil {
			return err
		}
	}
	return nil
}

// eventTime rounds a planned time to the second, as CD systems report.
func (f *Fleet) eventTime(t float64) float64 { return math.Round(t) }

// deployEvent announces a rollout (or a rollback) of m from one version to
// another at t.
func (f *Fleet) deployEvent(m *model, kind correlate.EventKind, from, to string, t float64) correlate.Event {
	at := f.at(f.eventTime(t))
	id := "argocd-" + m.spec.name + "-" + to
	verb := "rollout"
	if kind == correlate.KindRollback {
		id += "-rollback"
		verb = "rollback"
	}
	// An event id names one change: a demo run again on the same
	// database deploys the same version again, at another time.
	id += "-" + at.UTC().Format("20060102T150405")
	return correlate.Event{
		ID:      id,
		Kind:    kind,
		Time:    at,
		Scope:   correlate.Scope{Model: m.spec.name, Version: to},
		Source:  "argocd",
		Summary: fmt.Sprintf("%s %s %s -> %s", verb, m.spec.name, from, to),
		Attrs: map[string]any{
			"from_version": from, "to_version": to, "strategy": "RollingUpdate",
			"revision": int(valueAt(m.generation, t, 1)),
		},
	}
}

// changeEvent is a config or route change, with a hashed id.
func (f *Fleet) changeEvent(kind correlate.EventKind, source, modelName, summary string, t float64, attrs map[string]any) correlate.Event {
	prefix := map[correlate.EventKind]string{correlate.KindConfigChange: "cfg-", correlate.KindRouteChange: "route-"}[kind]
	if source == "feature-flags" {
		prefix = "flags-"
	}
	return correlate.Event{
		ID:      prefix + shortID(hashStr(f.seed, string(kind), source, modelName, summary, f.at(f.eventTime(t)).UTC().Format(time.RFC3339))),
		Kind:    kind,
		Time:    f.at(f.eventTime(t)),
		Scope:   correlate.Scope{Model: modelName},
		Source:  source,
		Summary: summary,
		Attrs:   attrs,
	}
}
