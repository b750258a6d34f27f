package correlate

import (
	"fmt"
	"math"
	"sort"
)

// downstreamCause: a dependency the models call got slow. Signature: the
// downstream stage explains the growth, its curve rose, the affected models
// are the ones that call it, and nothing local stands out.
func downstreamCause(f *facts) Cause {
	b := newCause(CatDownstream)
	ds := stageShare(f.stages, "downstream")
	b.support("downstream_growth", ds, ramp(ds, 0.25, 0.6), 0.55, "The downstream call explains %.0f%% of the tail's growth.", 100*ds)
	var callers []string
	var bestDev float64
	models := f.assessableModels(CatDownstream)
	for _, m := range models {
		d := f.modelDeviation(RoleStageTime, m, "downstream")
		g := d.During - d.Before
		r := safeRatio(d.During, d.Before)
		if math.IsNaN(g) {
			g = f.sampleStageGrowth(m, StageDownstream)
			r = math.NaN()
		}
		if g > 1 && (math.IsNaN(r) || r > 1.3) {
			callers = append(callers, m)
		}
		if !math.IsNaN(d.Deviation) && d.Deviation > bestDev {
			bestDev = d.Deviation
		}
	}
	if bestDev > 0 {
		b.support("downstream_curve_up", bestDev, strength(bestDev, 5), 0.20, "The downstream stage time curve rose %s.", iqrs(bestDev))
	}
	if len(models) > 0 {
		fr := float64(len(callers)) / float64(len(models))
		b.support("affected_models_call_it", fr, fr*ramp(ds, 0.1, 0.3), 0.15, "%d of %d affected models spend more time downstream.", len(callers), len(models))
	}
	f.supportNotLocal(b, "No single replica or node explains the slow requests.")
	grew := len(callers) > 0
	if !grew {
		callers = append(callers, models...)
	}
	sort.Strings(callers)
	sum := fmt.Sprintf("A downstream dependency slowed down for %s.", list(callers))
	if b.shown("downstream_growth") < claimed && b.shown("downstream_curve_up") < 0.5 {
		sum = fmt.Sprintf("The downstream call did not grow for %s (%.0f%% of the tail's growth).", list(callers), 100*ds)
	}
	return b.done(sum, Target{Models: callers})
}
