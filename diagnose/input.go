package diagnose

import (
	"context"
	"fmt"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// How much data before an incident window the analysis reads: the spike
// detector's trailing baseline needs an hour before the first point it
// judges, and the "before" phase is an hour long.
const (
	curveLead  = 70 * time.Minute
	sampleLead = 60 * time.Minute
	eventLead  = 60 * time.Minute
)

// SLOFunc returns a model's latency SLO in ms (false when unknown).
type SLOFunc func(model string) (float64, bool)

// LoadInput reads everything the analysis of one window needs. now bounds
// an open-ended window.
func LoadInput(ctx context.Context, st *store.Store, w correlate.Window, scope correlate.Scope, slo SLOFunc) (correlate.Input, error) {
	in := correlate.Input{Window: w, Scope: scope, Step: 15 * time.Second, SLO: slo}
	var err error
	in.Curves, err = st.Curves(ctx, store.CurveFilter{From: w.From.Add(-curveLead), To: w.To})
	if err != nil {
		return in, fmt.Errorf("load curves: %w", err)
	}
	in.Events, err = st.Events(ctx, store.EventFilter{From: w.From.Add(-eventLead), To: w.To})
	if err != nil {
		return in, fmt.Errorf("load events: %w", err)
	}
	in.Samples, err = st.Samples(ctx, store.SampleFilter{From: w.From.Add(-sampleLead), To: w.To})
	if err != nil {
		return in, fmt.Errorf("load samples: %w", err)
	}
	in.Step = stepOf(in.Curves)
	return in, nil
}

// stepOf infers the curves' step from the most common spacing of the first
// curve with enough points (15 s when unknown).
func stepOf(curves []correlate.Curve) time.Duration {
	for _, c := range curves {
		if len(c.Points) < 3 {
			continue
		}
		counts := map[int64]int{}
		for i := 1; i < len(c.Points) && i < 50; i++ {
			counts[c.Points[i].T-c.Points[i-1].T]++
		}
		var best int64
		for d, n := range counts {
			if n > counts[best] {
				best = d
			}
		}
		if best > 0 {
			return time.Duration(best) * time.Millisecond
		}
	}
	return 15 * time.Second
}

// incidentWindow is an incident's window, open ends closed at now.
func incidentWindow(in store.Incident, now time.Time) correlate.Window {
	w := correlate.Window{From: in.Start, To: now}
	if in.End != nil {
		w.To = *in.End
	}
	if !w.To.After(w.From) {
		w.To = w.From.Add(time.Minute)
	}
	return w
}
