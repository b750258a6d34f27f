package correlate

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sampleStats summarises one model's samples before and during the spike.
type sampleStats struct {
	model     string
	beforeN   int
	duringN   int
	beforeW   float64 // weighted counts (requests represented)
	duringW   float64
	p99Before float64 // weighted P99 of total_ms
	p99During float64
	slowMs    float64 // threshold: max(P99 before, SLO)
	// relative: with no baseline (no samples or P99 curve before the
	// onset, no SLO above it) slowMs is the spike's own P90, so a tenth
	// of its requests are slow by construction: no count of slow ones.
	relative    bool
	slowDuringW float64 // weighted slow requests during
	slowBeforeW float64
	beforeSpanS float64 // seconds covered, to turn weights into rates
	duringSpanS float64
	phase       [2][]int32 // the model's sample indexes before and during
	// stageSum and stageW accumulate each stage's weighted time per phase,
	// for stage means without another pass over the samples.
	stageSum [2][NumStages]float64
	stageW   [2][NumStages]float64
}

// feedCover is how many seconds of the before and during phases the
// samples cover, from the first sample to the last of all models: a
// sampler turned on, or retention cutting, 10 minutes before the onset
// holds 10 minutes of the hour before, and a rate over the whole hour
// would be six times too low (traffic "rose ×6.6" on steady load). A
// phase covered under two minutes is 0: no rate.
func feedCover(samples []Sample, ph phases) (before, during float64) {
	if len(samples) == 0 {
		return 0, 0
	}
	first, last := samples[0].Time, samples[0].Time
	for i := range samples {
		if t := samples[i].Time; t.Before(first) {
			first = t
		} else if t.After(last) {
			last = t
		}
	}
	cover := func(from, to time.Time) float64 {
		if first.After(from) {
			from = first
		}
		if last.Before(to) {
			to = last
		}
		d := to.Sub(from)
		if d < 2*time.Minute {
			return 0
		}
		return d.Seconds()
	}
	return cover(ph.BeforeFrom, ph.BeforeTo), cover(ph.Onset, ph.DuringTo)
}

// slowFracDuring is the weighted share of requests over the threshold
// during the spike; slowFracBefore the same before (≈ 1 % by construction).
// The slow fractions of a phase with under minQuantileSamples samples are
// unknown (NaN): two samples are no baseline.
func (m sampleStats) slowFracDuring() float64 {
	if m.duringN < minQuantileSamples {
		return math.NaN()
	}
	return safeRatio(m.slowDuringW, m.duringW)
}

func (m sampleStats) slowFracBefore() float64 {
	if m.beforeN < minQuantileSamples {
		return math.NaN()
	}
	return safeRatio(m.slowBeforeW, m.beforeW)
}

// sampleSet is the samples of an analysis split into phases, with each
// model's slowness threshold.
type sampleSet struct {
	all     []Sample
	before  []int32
	during  []int32
	byModel map[string]*sampleStats
	slow    []bool               // per sample: over its model's threshold
	started map[string]time.Time // replica → start time, from replica_start events
	ph      phases               // the phases the samples were split by
	// beforeSpanS and duringSpanS are the seconds of each phase the feed
	// covers (0: too little to turn weights into rates).
	beforeSpanS, duringSpanS float64
}

// basis says what the model's slow requests were judged against.
func (st *sampleStats) basis() string {
	if st.relative {
		return SlowBasisSpikeTail
	}
	return SlowBasisBaseline
}

// newSampleSet splits samples into phases and labels the slow ones: a
// sample is slow when its total exceeds its model's P99 before the onset
// (or the model's SLO, when that is higher), as in MacroBase's "outlier =
// above the 99th percentile" with the SLO as a floor.
func newSampleSet(samples []Sample, ph phases, slo func(string) (float64, bool), started map[string]time.Time) *sampleSet {
	return newSampleSetWith(samples, ph, slo, started, nil)
}

// newSampleSetWith is newSampleSet with the models' P99 before the onset
// from their curves (NaN where unknown), the threshold for a model whose
// samples hold no baseline of their own: a sampler turned on at the
// onset, or a feed that kept three slow requests. The samples' own P90
// would then call a tenth of the spike's requests slow by construction
// (and none of three), whatever the curves show.
func newSampleSetWith(samples []Sample, ph phases, slo func(string) (float64, bool), started map[string]time.Time, curveP99 func(string) float64) *sampleSet {
	ss := &sampleSet{all: samples, byModel: map[string]*sampleStats{}, slow: make([]bool, len(samples)), started: started, ph: ph}
	// Per model, by a dense number: one small-index lookup per sample
	// instead of several map writes.
	var models smallIndex
	var tot [][2][]weighted
	ss.beforeSpanS, ss.duringSpanS = feedCover(samples, ph)
	var idx [][2][]int32
	for i := range samples {
		s := &samples[i]
		var k int
		switch {
		case ph.inBefore(s.Time):
			ss.before = append(ss.before, int32(i))
			k = 0
		case ph.inDuring(s.Time):
			ss.during = append(ss.during, int32(i))
			k = 1
		default:
			continue
		}
		mi := models.get(s.Model)
		if mi == len(tot) {
			tot = append(tot, [2][]weighted{})
			idx = append(idx, [2][]int32{})
		}
		tot[mi][k] = append(tot[mi][k], weighted{s.TotalMs, s.SampleRate})
		idx[mi][k] = append(idx[mi][k], int32(i))
	}
	for mi, model := range models.vals {
		m := tot[mi]
		st := &sampleStats{model: model, beforeN: len(m[0]), duringN: len(m[1]), phase: idx[mi]}
		// A P99 of a handful of samples is their largest: no quantile.
		st.p99Before, st.p99During = math.NaN(), math.NaN()
		if len(m[0]) >= minQuantileSamples {
			st.p99Before = weightedQuantile(m[0], 0.99)
		}
		if len(m[1]) >= minQuantileSamples {
			st.p99During = weightedQuantile(m[1], 0.99)
		}
		st.slowMs = st.p99Before
		if math.IsNaN(st.slowMs) && curveP99 != nil {
			st.slowMs = curveP99(model)
		}
		if math.IsNaN(st.slowMs) {
			// No baseline samples: fall back to the during P90 so that "slow"
			// still means the tail.
			st.slowMs, st.relative = weightedQuantile(m[1], 0.90), true
		}
		if v, ok := slo(model); ok && v > st.slowMs {
			st.slowMs, st.relative = v, false
		}
		st.beforeSpanS, st.duringSpanS = ss.beforeSpanS, ss.duringSpanS
		ss.byModel[model] = st
	}
	for phase, list := range [2][]int32{ss.before, ss.during} {
		for _, i := range list {
			s := &samples[i]
			st := ss.byModel[s.Model]
			slow := s.TotalMs > st.slowMs
			ss.slow[i] = slow
			w, slowW := &st.beforeW, &st.slowBeforeW
			if phase == 1 {
				w, slowW = &st.duringW, &st.slowDuringW
			}
			*w += s.SampleRate
			if slow {
				*slowW += s.SampleRate
			}
			for k, v := range s.StagesMs {
				if !math.IsNaN(v) {
					st.stageSum[phase][k] += s.SampleRate * v
					st.stageW[phase][k] += s.SampleRate
				}
			}
		}
	}
	return ss
}

// models returns the models with samples, sorted.
func (ss *sampleSet) models() []string {
	out := make([]string, 0, len(ss.byModel))
	for m := range ss.byModel {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// batchBucket groups batch sizes (and token counts) into powers of two,
// so the dimension has a handful of values: "1", "2", "3-4", "5-8", …
func batchBucket(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= 2 {
		return strconv.Itoa(n)
	}
	hi := 4
	for hi < n {
		hi *= 2
	}
	return strconv.Itoa(hi/2+1) + "-" + strconv.Itoa(hi)
}

// youngAge is how long a replica counts as warming up after it started.
const youngAge = 15 * time.Minute

// replicaAge labels a sample "young" when its replica started less than
// youngAge before the request, "warm" when it started earlier, and "" when
// the start is unknown (a replica older than the pulled history).
func (ss *sampleSet) replicaAge(s *Sample) string {
	st, ok := ss.started[s.Replica]
	if !ok {
		return "warm"
	}
	if age := s.Time.Sub(st); age >= 0 && age < youngAge {
		return "young"
	}
	return "warm"
}

// concentrationTable builds the table for concentrate over the during
// samples of the given models (all when models is empty): selection = slow
// samples, baseline = the other samples of the same window, which removes
// time confounders such as the traffic mix.
func (ss *sampleSet) concentrationTable(models map[string]bool) concTable {
	rows := make([]int32, 0, len(ss.during))
	for _, i := range ss.during {
		if len(models) == 0 || models[ss.all[i].Model] {
			rows = append(rows, i)
		}
	}
	n := len(ss.all)
	enc := func(name string, f func(s *Sample) string) dimension {
		return encodeDimension(name, n, rows, func(i int32) string { return f(&ss.all[i]) })
	}
	dims := []dimension{
		enc("model", func(s *Sample) string { return s.Model }),
		enc("version", func(s *Sample) string { return s.Version }),
		enc("tenant", func(s *Sample) string { return s.Tenant }),
		enc("replica", func(s *Sample) string { return s.Replica }),
		enc("node", func(s *Sample) string { return s.Node }),
		enc("entry", func(s *Sample) string { return s.Entry }),
		enc("status", func(s *Sample) string { return s.Status }),
		enc("batch_size", func(s *Sample) string { return batchBucket(s.BatchSize) }),
	}
	if len(ss.started) > 0 {
		dims = append(dims, enc("replica_age", ss.replicaAge))
	}
	if ss.hasDependency() {
		dims = append(dims, enc("dependency", func(s *Sample) string { return s.Dependency }))
	}
	in, out := ss.hasTokens()
	if in {
		dims = append(dims, enc("input_tokens", func(s *Sample) string { return batchBucket(s.InputTokens) }))
	}
	if out {
		dims = append(dims, enc("output_tokens", func(s *Sample) string { return batchBucket(s.OutputTokens) }))
	}
	t := concTable{dims: dims, slow: ss.slow, rows: rows, weight: make([]float64, n), latency: make([]float64, n)}
	for i := range ss.all {
		t.weight[i] = ss.all[i].SampleRate
		t.latency[i] = ss.all[i].TotalMs
	}
	return t
}

// stageGrowth is a model's weighted mean time in stage k during the spike
// minus before (NaN when either phase has no such sample).
func (m *sampleStats) stageGrowth(k Stage) float64 {
	if m == nil || m.stageW[0][k] == 0 || m.stageW[1][k] == 0 {
		return math.NaN()
	}
	return m.stageSum[1][k]/m.stageW[1][k] - m.stageSum[0][k]/m.stageW[0][k]
}

// fillTailShares sets each concentration row's share of the tail's growth:
// how much of its models' P99 rise over their baseline (the same models'
// P99 before the onset) removing its requests undoes.
func fillTailShares(rows []Concentration, ss *sampleSet) {
	base := map[string]float64{}
	for i := range rows {
		r := &rows[i]
		if len(r.Models) == 0 || r.P99WithoutMs <= 0 {
			continue
		}
		key := strings.Join(r.Models, "\x00")
		b, ok := base[key]
		if !ok {
			var ws []weighted
			for _, m := range r.Models {
				if st := ss.byModel[m]; st != nil {
					for _, i := range st.phase[0] {
						ws = append(ws, weighted{ss.all[i].TotalMs, ss.all[i].SampleRate})
					}
				}
			}
			b = weightedQuantile(ws, 0.99)
			base[key] = b
		}
		if rise := r.P99Ms - b; rise > 0 && !math.IsNaN(b) {
			r.TailShare = round3(clamp01(r.P99DeltaMs / rise))
		}
	}
}

// hasTokens reports whether any sample during the spike carries prompt
// (in) or generated (out) token counts.
func (ss *sampleSet) hasTokens() (in, out bool) {
	for _, i := range ss.during {
		in = in || ss.all[i].InputTokens > 0
		out = out || ss.all[i].OutputTokens > 0
		if in && out {
			break
		}
	}
	return in, out
}

// hasDependency reports whether any sample names its dependency.
func (ss *sampleSet) hasDependency() bool {
	for i := range ss.all {
		if ss.all[i].Dependency != "" {
			return true
		}
	}
	return false
}
