package correlate

import (
	"fmt"
	"math"
	"sort"
	"strings"
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
	var bestD CurveDeviation
	models := f.assessableModels(CatDownstream)
	for _, m := range models {
		d := f.modelDeviation(RoleStageTime, m, "downstream")
		if math.IsNaN(d.Deviation) {
			d = f.dependencyDeviation(m) // per-dependency call times only
		}
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
			bestDev, bestD = d.Deviation, d
		}
	}
	// A curve within its own usual range is no evidence, however many
	// IQRs its extreme is ("rose from 15 ms to 15 ms", a batching demo).
	if bestDev > 0 && bestD.Score > 0 {
		b.support("downstream_curve_up", bestDev, strength(bestDev, 5), 0.20, "%s %s.", curveSubject(bestD), moved(bestD)).restsOn("", bestD.Key, nil)
	}
	if len(models) > 0 {
		fr := float64(len(callers)) / float64(len(models))
		e := b.support("affected_models_call_it", fr, fr*ramp(ds, 0.1, 0.3), 0.15, "%s %s more time downstream.", capitalize(kOfN(len(callers), len(models), "affected model")), verbFor(len(callers), "spends", "spend"))
		if n := len(f.affected); e != nil && n > len(models) {
			e.Summary = fmt.Sprintf("%s with downstream timings %s more time downstream (%d of the %d affected models %s none).", capitalize(kOfN(len(callers), len(models), "affected model")), verbFor(len(callers), "spends", "spend"), n-len(models), n, verbFor(n-len(models), "has", "have"))
		}
	}
	f.supportNotLocal(b, "No single replica or node explains the slow requests.")
	grew := len(callers) > 0
	if !grew {
		callers = append(callers, models...)
	}
	sort.Strings(callers)
	dep := f.slowDependency(callers)
	if dep.name != "" {
		b.support("dependency_named", dep.ratio, ramp(dep.ratio, 1.3, 3), 0.10, "%s", dep.summary)
	}
	var sum string
	switch {
	case b.shown("downstream_growth") < claimed && b.shown("downstream_curve_up") < 0.5 && !stageMeasured(f.stages, "downstream"):
		// Stage times from one side of the onset only (said which), from
		// too few slow requests to compare, or a stage that reads 0
		// throughout: nothing says whether the call grew.
		sum = fmt.Sprintf("For %s, no downstream call time is measured during the spike.", list(callers))
		if why := f.timedOneSide(callers, "the downstream call time", StageDownstream); why != "" {
			sum = fmt.Sprintf("For %s, %s.", list(callers), why)
		}
	case b.shown("downstream_growth") < claimed && b.shown("downstream_curve_up") < 0.5:
		sum = fmt.Sprintf("For %s, the downstream call %s.", list(callers), grewLittle(ds, "explains"))
	case dep.name != "" && b.shown("dependency_named") >= claimed:
		sum = fmt.Sprintf("Dependency %s slowed down for %s.", dep.name, list(callers))
	case dep.name != "":
		sum = fmt.Sprintf("A downstream dependency slowed down for %s; of those the data names, %s slowed most (×%.1f), too little to blame it.", list(callers), dep.name, dep.ratio)
		dep.name = ""
	default:
		sum = fmt.Sprintf("A downstream dependency slowed down for %s; the data does not name it (no dependency on samples or stage curves).", list(callers))
		dep.name = ""
	}
	return f.done(b, sum, Target{Models: callers, Dependency: dep.name})
}

// slowDep is the dependency whose calls slowed most, and how.
type slowDep struct {
	name    string
	ratio   float64 // mean call time during / before
	summary string
}

// slowDependency names the dependency whose calls got slower the most for
// the given models: from samples that name their dependency (the mean
// downstream time per dependency, before vs during, each from at least
// minQuantileSamples samples; the one that added the most time to the
// requests, not a rarely called one whose few calls doubled), else from
// per dependency stage curves ("downstream/<name>").
func (f *facts) slowDependency(models []string) slowDep {
	type acc struct {
		sum, w [2]float64
		n      [2]int
	}
	per := map[string]*acc{}
	for _, m := range models {
		st := f.ss.byModel[m]
		if st == nil {
			continue
		}
		for phase, idx := range st.phase {
			for _, i := range idx {
				s := &f.ss.all[i]
				v := s.StagesMs[StageDownstream]
				if s.Dependency == "" || math.IsNaN(v) {
					continue
				}
				a := per[s.Dependency]
				if a == nil {
					a = &acc{}
					per[s.Dependency] = a
				}
				a.sum[phase] += s.SampleRate * v
				a.w[phase] += s.SampleRate
				a.n[phase]++
			}
		}
	}
	var best slowDep
	bestAdded := 0.0
	for _, name := range sortedKeys(per) {
		a := per[name]
		if a.n[0] < minQuantileSamples || a.n[1] < minQuantileSamples {
			continue
		}
		b, d := safeRatio(a.sum[0], a.w[0]), safeRatio(a.sum[1], a.w[1])
		// The time its slowdown added during the spike: calls × extra.
		if added := a.w[1] * (d - b); added > bestAdded {
			r := safeRatio(d, b)
			bestAdded, best = added, slowDep{name: name, ratio: r, summary: fmt.Sprintf("Calls to %s went from %s to %s on average (×%.1f, from samples).", name, fmtMs(b), fmtMs(d), r)}
		}
	}
	if best.name != "" {
		return best
	}
	for _, m := range models {
		for _, c := range f.cs.get(RoleStageTime, LevelModel, Scope{Model: m}, "") {
			name, ok := strings.CutPrefix(c.Stage, DependencyStage)
			if !ok || c.Scope.Model != m {
				continue
			}
			d := deviation(c, f.ph)
			if r := safeRatio(d.During, d.Before); r > best.ratio {
				best = slowDep{name: name, ratio: r, summary: fmt.Sprintf("%s's calls to %s went from %s to %s on average (×%.1f).", m, name, fmtMs(d.Before), fmtMs(d.During), r)}
			}
		}
	}
	return best
}

// dependencyDeviation is the deviation of the model's per-dependency call
// time curve that rose most (NaN without such curves).
func (f *facts) dependencyDeviation(m string) CurveDeviation {
	best := CurveDeviation{Deviation: math.NaN(), Before: math.NaN(), During: math.NaN()}
	for _, c := range f.cs.get(RoleStageTime, LevelModel, Scope{Model: m}, "") {
		if c.Scope.Model != m || !strings.HasPrefix(c.Stage, DependencyStage) {
			continue
		}
		if d := deviation(c, f.ph); !math.IsNaN(d.Deviation) && (math.IsNaN(best.Deviation) || d.Deviation > best.Deviation) {
			best = d
		}
	}
	return best
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
