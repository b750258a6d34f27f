package correlate

import (
	"math"
	"sort"
)

// tailQ is the tail the stage attribution compares: the slowest 5 % of
// requests of each period. P99 itself is too thin a slice of head-sampled
// data; the top 5 % moves with it and has enough samples for an interval.
const tailQ = 0.95

// stageAttributionFromSamples says how many milliseconds of the tail's
// growth each stage explains: for every model, the weighted mean time per
// stage of the slowest 5 % during the spike minus the same before, pooled
// over models by their slow traffic. The interval is a normal approximation
// using Kish's effective sample size for the weights.
func stageAttributionFromSamples(ss *sampleSet, models []string) []StageShare {
	type acc struct{ d, v, w float64 } // weighted sums of delta, variance
	var (
		pooled [NumStages]acc
		before [NumStages]acc
		during [NumStages]acc
		total  acc // the growth of the requests' total time
		any    bool
	)
	for _, m := range models {
		st := ss.byModel[m]
		if st == nil {
			continue
		}
		bt := tailOf(ss, st.phase[0])
		dt := tailOf(ss, st.phase[1])
		if len(bt) < 3 || len(dt) < 3 {
			continue
		}
		w := st.slowDuringW
		if w <= 0 {
			w = 1
		}
		total.d += w * (totalMean(ss, dt) - totalMean(ss, bt))
		total.w += w
		for k := 0; k < NumStages; k++ {
			mb, vb, nb := stageMoments(ss, bt, k)
			md, vd, nd := stageMoments(ss, dt, k)
			if math.IsNaN(mb) || math.IsNaN(md) {
				continue
			}
			any = true
			pooled[k].d += w * (md - mb)
			pooled[k].v += w * w * (vb/nb + vd/nd)
			pooled[k].w += w
			before[k].d += w * mb
			before[k].w += w
			during[k].d += w * md
			during[k].w += w
		}
	}
	if !any {
		return nil
	}
	out := make([]StageShare, 0, NumStages)
	for k := 0; k < NumStages; k++ {
		if pooled[k].w == 0 {
			continue
		}
		d := pooled[k].d / pooled[k].w
		se := math.Sqrt(pooled[k].v) / pooled[k].w
		out = append(out, StageShare{
			Stage:     Stage(k).String(),
			BeforeMs:  before[k].d / before[k].w,
			DuringMs:  during[k].d / during[k].w,
			DeltaMs:   d,
			DeltaLoMs: d - 1.96*se,
			DeltaHiMs: d + 1.96*se,
		})
	}
	fillShares(out, total.d/total.w)
	return out
}

// totalMean is the weighted mean total time of the samples.
func totalMean(ss *sampleSet, list []int32) float64 {
	var sw, sx float64
	for _, i := range list {
		w := ss.all[i].SampleRate
		sw += w
		sx += w * ss.all[i].TotalMs
	}
	return sx / sw
}

// tailOf returns the samples of one model's phase list at or above their
// weighted tailQ quantile.
func tailOf(ss *sampleSet, list []int32) []int32 {
	if len(list) == 0 {
		return nil
	}
	ws := make([]weighted, len(list))
	for k, i := range list {
		ws[k] = weighted{ss.all[i].TotalMs, ss.all[i].SampleRate}
	}
	cut := weightedQuantile(ws, tailQ)
	var out []int32
	for _, i := range list {
		if ss.all[i].TotalMs >= cut {
			out = append(out, i)
		}
	}
	return out
}

// stageMoments returns the weighted mean and variance of stage k over the
// samples, and Kish's effective sample size. NaN mean when no sample
// reported the stage.
func stageMoments(ss *sampleSet, list []int32, k int) (mean, variance, neff float64) {
	var sw, sw2, sx float64
	for _, i := range list {
		v := ss.all[i].StagesMs[k]
		if math.IsNaN(v) {
			continue
		}
		w := ss.all[i].SampleRate
		sw += w
		sw2 += w * w
		sx += w * v
	}
	if sw == 0 {
		return math.NaN(), 0, 1
	}
	mean = sx / sw
	var sv float64
	for _, i := range list {
		v := ss.all[i].StagesMs[k]
		if math.IsNaN(v) {
			continue
		}
		sv += ss.all[i].SampleRate * (v - mean) * (v - mean)
	}
	variance = sv / sw
	neff = sw * sw / sw2
	return mean, variance, math.Max(neff, 1)
}

// stageAttributionFromCurves is the fallback without samples: the change in
// each model's mean time per stage (stage_time curves), before vs during.
// Means move less than tails, so shares are reliable but deltas understate
// the P99 growth; the UI says which source was used.
//
// Where the timed stages add up to under half of a model's median latency
// during the spike, they are not the whole request (a server that times only its
// downstream calls): their shares are then of that quantile's growth
// where it is larger, so one timed stage's 10 ms is not "all of" a 300 ms
// rise.
func stageAttributionFromCurves(cs *curveSet, models []string, ph phases) []StageShare {
	var out []StageShare
	var timedShare, latGrowth []float64
	for _, m := range models {
		// The median only: stage means sit far below a P95 or P99, which
		// would make any fully timed request look partly timed.
		lat := cs.model(RoleLatencyP50, m, "")
		b, d := periodMedian(lat, ph.BeforeFrom, ph.BeforeTo), periodMedian(lat, ph.Onset, ph.DuringTo)
		timed := 0.0
		for k := 0; k < NumStages; k++ {
			c := cs.model(RoleStageTime, m, Stage(k).String())
			if c == nil && stageSignal(Stage(k).String()) == sigFront {
				c = cs.fleet(RoleStageTime, Stage(k).String())
			}
			if v := periodMedian(c, ph.Onset, ph.DuringTo); !math.IsNaN(v) {
				timed += v
			}
		}
		if !math.IsNaN(b) && !math.IsNaN(d) && d > 0 && timed > 0 {
			timedShare, latGrowth = append(timedShare, timed/d), append(latGrowth, d-b)
		}
	}
	growth := 0.0
	if len(timedShare) > 0 && mean(timedShare) < 0.5 {
		growth = mean(latGrowth)
	}
	for k := 0; k < NumStages; k++ {
		name := Stage(k).String()
		var b, d []float64
		for _, m := range models {
			c := cs.model(RoleStageTime, m, name)
			if c == nil && stageSignal(name) == sigFront {
				c = cs.fleet(RoleStageTime, name) // one gateway in front of every model
			}
			if c == nil {
				continue
			}
			vb, vd := periodMedian(c, ph.BeforeFrom, ph.BeforeTo), periodMedian(c, ph.Onset, ph.DuringTo)
			if math.IsNaN(vb) || math.IsNaN(vd) {
				continue
			}
			b, d = append(b, vb), append(d, vd)
		}
		if len(b) == 0 {
			continue
		}
		mb, md := mean(b), mean(d)
		out = append(out, StageShare{Stage: name, BeforeMs: mb, DuringMs: md, DeltaMs: md - mb, DeltaLoMs: md - mb, DeltaHiMs: md - mb})
	}
	// Without a median to tell whether the timed stages are the whole
	// request, one stage alone is taken as not: its share of the stages'
	// growth is 1 by construction ("the downstream call explains 100 %"
	// of a 300 ms P99 rise on its 10 ms). Its share is then of the growth
	// of the latency the model is measured by: its mean, else a quantile.
	if len(timedShare) == 0 && len(out) == 1 {
		var g []float64
		for _, m := range models {
			for _, role := range []Role{RoleLatencyMean, RoleLatencyP95, RoleLatencyP99} {
				c := cs.model(role, m, "")
				b, d := periodMedian(c, ph.BeforeFrom, ph.BeforeTo), periodMedian(c, ph.Onset, ph.DuringTo)
				if !math.IsNaN(b) && !math.IsNaN(d) {
					g = append(g, d-b)
					break
				}
			}
		}
		if len(g) > 0 {
			growth = mean(g)
		}
	}
	// Stage means that did not move (their rises together under 2 % of
	// their level, or half a millisecond) explain none of the growth:
	// shares of a few microseconds' wobble would read "71 % of the growth".
	var pos, level float64
	for _, s := range out {
		pos, level = pos+math.Max(s.DeltaMs, 0), level+s.BeforeMs
	}
	if pos < math.Max(stillStagesMs, stillStagesFrac*level) {
		return out
	}
	fillShares(out, growth)
	return out
}

// Below these the stage-time curves' rises are wobble, not growth.
const (
	stillStagesMs   = 0.5
	stillStagesFrac = 0.02
)

// fillShares sets each stage's share of the growth: of the stages'
// positive deltas, or of the requests' whole growth where that is larger
// — the timed stages are then not the whole request, and the rest of the
// growth is in time no stage accounts for.
func fillShares(out []StageShare, whole float64) {
	var pos float64
	for _, s := range out {
		pos += math.Max(s.DeltaMs, 0)
	}
	if !math.IsNaN(whole) && whole > pos {
		pos = whole
	}
	for i := range out {
		if pos > 0 {
			out[i].Share = math.Max(out[i].DeltaMs, 0) / pos
		}
	}
}

// stageShare returns the share of the named stage (0 when absent).
func stageShare(stages []StageShare, name string) float64 {
	for _, s := range stages {
		if s.Stage == name {
			return s.Share
		}
	}
	return 0
}

// stageMeasured reports whether the attribution has the stage with a
// non-zero time before or during (a server that does not time a stage
// reports 0 throughout, which says nothing about it).
func stageMeasured(stages []StageShare, name string) bool {
	for _, s := range stages {
		if s.Stage == name {
			return s.BeforeMs > 0 || s.DuringMs > 0
		}
	}
	return false
}

// dominantStages lists stages by share, largest first.
func dominantStages(stages []StageShare) []StageShare {
	out := append([]StageShare(nil), stages...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Share > out[j].Share })
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// stageTimedWhen says whether any of the models has stage k timed before
// the onset and during the spike, by samples or by stage curves. A stage
// timed on one side only cannot be compared, yet it is not "unmeasured".
func (f *facts) stageTimedWhen(models []string, k Stage) (before, during bool) {
	for _, m := range models {
		if st := f.ss.byModel[m]; st != nil {
			before = before || st.stageW[0][k] > 0
			during = during || st.stageW[1][k] > 0
		}
		if c := f.cs.model(RoleStageTime, m, k.String()); c != nil {
			before = before || len(values(c.Points, f.ph.BeforeFrom, f.ph.BeforeTo)) > 0
			during = during || len(values(c.Points, f.ph.Onset, f.ph.DuringTo)) > 0
		}
	}
	return before, during
}

// timedOneSide says which side of the onset lacks the times of the
// stages named what when only one side has them ("" otherwise): either
// way there is nothing to compare with, yet the stage is not unmeasured.
func (f *facts) timedOneSide(models []string, what string, stages ...Stage) string {
	var before, during bool
	for _, k := range stages {
		b, d := f.stageTimedWhen(models, k)
		before, during = before || b, during || d
	}
	switch {
	case during && !before:
		return what + " is measured only during the spike, with no measurement before the onset to compare it with"
	case before && !during:
		return what + " is measured before the onset but not during the spike"
	}
	return ""
}
