package correlate

import (
	"fmt"
	"math"
	"regexp"
)

// batchingWords are what a batching config change talks about.
var batchingWords = regexp.MustCompile(`(?i)batch|queue[_ ]?delay|max_queue|window|preferred_batch`)

// batchingCause: the dynamic-batching window grew, so requests wait to fill
// batches. Signature: the batch_wait stage explains the growth, batches got
// bigger, a batching config change came shortly before, and neither traffic
// nor GPU saturation explains it.
func batchingCause(f *facts) Cause {
	b := newCause(CatBatching)
	bw := stageShare(f.stages, "batch_wait")
	b.support("batch_wait_growth", bw, ramp(bw, 0.25, 0.6), 0.45, "Waiting for a batch explains %.0f%% of the tail's growth.", 100*bw)
	// The model whose batch wait grew most is the target.
	model, grew := "", 0.0
	for _, m := range f.assessableModels(CatBatching) {
		d := f.modelDeviation(RoleStageTime, m, "batch_wait")
		g := d.During - d.Before
		if math.IsNaN(g) {
			g = f.sampleStageGrowth(m, StageBatchWait)
		}
		if g > grew || model == "" {
			model, grew = m, g
		}
	}
	if model != "" {
		d := f.modelDeviation(RoleBatchSize, model, "")
		// Far outside its usual range is not enough: 1.2 to 1.3 requests
		// a batch is, on a calm curve, and changes nothing.
		if grown := safeRatio(d.During, d.Before); !math.IsNaN(d.Deviation) && d.Deviation > 0 && d.Score > 0 {
			b.support("bigger_batches", d.Deviation, strength(d.Deviation, 4)*ramp(grown, 1.1, 1.4), 0.15, "%s's average batch grew from %.1f to %.1f requests.", model, d.Before, d.During).restsOn("", d.Key, nil)
		} else if math.IsNaN(d.Deviation) {
			// No batch-size curve: the samples' batch sizes, which made
			// batching assessable, are what says whether batches grew.
			if before, during := f.sampleBatchMeans(model); !math.IsNaN(before) && !math.IsNaN(during) {
				grown := during / before
				b.support("bigger_batches", grown, ramp(grown, 1.1, 1.4), 0.15, "%s's sampled requests ran in batches of %.1f on average, against %.1f before (from samples).", model, during, before)
			}
		}
	}
	// Longer answers stay longer in each batch (an LLM server's running
	// requests are its batch): bigger batches without a wider window.
	if l, ok := f.answersLength([]string{model}); ok && model != "" && b.shown("bigger_batches") > 0 && l.ratio >= lengthFlat {
		b.oppose("requests_longer", l.ratio, ramp(l.ratio, lengthFlat, 1.8), 0.3,
			"%s: longer requests keep more of them in each batch by themselves, without a wider batching window.", l.sentence()).restsOn("", l.key, nil)
	}
	ev, w := bestEvent(f.events, func(e AlignedEvent) bool {
		return (e.Model == "" || e.Model == model) && mentions(e.Event, batchingWords)
	}, KindConfigChange, KindDeploy)
	if ev != nil {
		b.support("batching_config_change", -ev.OffsetS, w, 0.20, "Config change %q at %s, %s.", ev.Summary, ev.Time.Format("15:04:05"), ago(*ev)).restsOn(ev.ID, "", nil)
	}
	q := f.affectedQPSRatio()
	g := f.gpuUtilDuring()
	if !math.IsNaN(q) {
		calm := ramp(1.3-q, 0, 0.15)
		if !math.IsNaN(g) {
			calm *= ramp(95-g, 0, 10)
		}
		// Said of a wait that grew: beside "waiting for batches explains
		// none of the tail's growth" (routing demo), "so the wait is not
		// queueing under load" spoke of a wait there was not.
		if b.shown("batch_wait_growth") >= claimed {
			b.corroborate("not_overloaded", q, calm, 0.10, "Traffic %s, so the wait is not queueing under load.", trafficNotUp(q))
		}
		if q > 1.3 {
			b.oppose("traffic_up", q, ramp(q, 1.3, 2), 0.2, "Traffic rose ×%.2f, which fills batches and queues by itself.", q)
		}
	}
	// Bigger batches also follow load piled onto fewer replicas: with the
	// batch wait measured and flat while the queue, a dependency or the
	// gateway took most of the growth, the batches are not why. (Exec is
	// left out: bigger batches do run longer.)
	// Unmeasured, the batch wait may hide in the queue's time (Triton's
	// queue includes the batching delay).
	if top := dominantStages(f.stages); stageMeasured(f.stages, "batch_wait") && len(top) > 0 && top[0].Share > 0.5 && bw < 0.25 &&
		top[0].Stage != "batch_wait" && top[0].Stage != "exec" {
		b.oppose("growth_elsewhere", top[0].Share, 1-ramp(bw, 0.1, 0.25), 0.3,
			"%.0f%% of the tail's growth is in the %s stage, not in waiting for batches.", 100*top[0].Share, top[0].Stage)
	}
	// A window that grew makes requests wait for it. Bigger batches with
	// the batch wait measured and flat (and no batching change) are more
	// requests per window — load, or load piled onto fewer replicas.
	if b.shown("bigger_batches") > 0 && b.shown("batching_config_change") == 0 && stageMeasured(f.stages, "batch_wait") && bw < 0.1 {
		b.oppose("batches_fill_without_waiting", bw, 1-ramp(bw, 0.05, 0.1), 0.3,
			"Batches grew but requests did not wait longer for them (%.0f%% of the tail's growth): more requests per window, not a longer window.", 100*bw)
	}
	if len(f.slowed) == 1 {
		b.corroborate("one_model", 1, 1, 0.10, "Only %s slowed down; batching is configured per model.", model)
	}
	untimed := "the batch wait is not measured"
	if why := f.timedOneSide([]string{model}, "the batch wait", StageBatchWait); why != "" {
		untimed = why
	}
	return f.done(b, batchingSummary(b, model, bw, stageMeasured(f.stages, "batch_wait"), untimed), Target{Model: model})
}

// batchingSummary claims a grown batching window only on a batching config
// change or bigger batches, and waiting for batches only when the batch
// wait grew.
// timed says whether the batch wait is measured at all: when it is not, how
// long requests wait for batches is unknown, not "none of the growth";
// untimed then says why ("the batch wait is not measured", or measured
// only during the spike).
func batchingSummary(b *causeBuilder, model string, share float64, timed bool, untimed string) string {
	config := b.shown("batching_config_change") >= claimed
	window := config || b.shown("bigger_batches") >= claimed
	wait := b.shown("batch_wait_growth") >= claimed
	switch {
	case !timed && config:
		return fmt.Sprintf("%s's batching changed; %s, so whether requests now wait longer is unknown.", model, untimed)
	case !timed && window:
		return fmt.Sprintf("%s's batches grew; %s, so whether requests now wait longer is unknown.", model, untimed)
	case !timed:
		return fmt.Sprintf("No sign that %s's batching changed (%s).", model, untimed)
	case window && wait:
		return fmt.Sprintf("%s's dynamic-batching window grew; requests wait for batches to fill.", model)
	case wait:
		return fmt.Sprintf("%s's requests wait longer for batches to fill (%.0f%% of the tail's growth).", model, 100*share)
	case config:
		return fmt.Sprintf("%s's batching changed, but waiting for batches explains %s the tail's growth.", model, onlyShare(share))
	case window:
		return fmt.Sprintf("%s's batches grew, but waiting for batches explains %s the tail's growth.", model, onlyShare(share))
	}
	if share >= littleShare {
		return fmt.Sprintf("Waiting for batches explains only %.0f%% of %s's tail growth.", 100*share, model)
	}
	return fmt.Sprintf("No sign that %s's requests wait longer for batches (%.0f%% of the tail's growth).", model, 100*share)
}

// littleShare is the share of the tail's growth below which a stage "did
// not grow"; above it, a stage that took too little to be the cause still
// took part, and is said to explain only its share.
const littleShare = 0.05

// grewLittle words a stage's small share of the tail's growth: "did not
// grow (3% …)" below littleShare, else "explains only 34% of …" (explain
// is the verb's form for the subject: "explains" or "explain").
func grewLittle(share float64, explain string) string {
	if share < littleShare {
		return fmt.Sprintf("did not grow (%.0f%% of the tail's growth)", 100*share)
	}
	return fmt.Sprintf("%s only %.0f%% of the tail's growth", explain, 100*share)
}

// onlyShare words a small share: "none of" when it rounds to 0 %, else
// "only N % of" ("only 0 %" read as a measurement error).
func onlyShare(share float64) string {
	if math.Round(100*share) <= 0 {
		return "none of"
	}
	return fmt.Sprintf("only %.0f%% of", 100*share)
}

// sampleStageGrowth is a model's weighted mean time in stage k during minus
// before, from samples (NaN without them).
func (f *facts) sampleStageGrowth(model string, k Stage) float64 {
	return f.ss.byModel[model].stageGrowth(k)
}

// sampleBatchMeans is a model's weighted mean batch size before and
// during the spike, from the samples that report one (at least
// minQuantileSamples a phase; NaN otherwise).
func (f *facts) sampleBatchMeans(model string) (before, during float64) {
	st := f.ss.byModel[model]
	out := [2]float64{math.NaN(), math.NaN()}
	if st == nil {
		return out[0], out[1]
	}
	for phase, list := range st.phase {
		var sw, sx float64
		n := 0
		for _, i := range list {
			if s := &f.ss.all[i]; s.BatchSize > 0 {
				sw += s.SampleRate
				sx += s.SampleRate * float64(s.BatchSize)
				n++
			}
		}
		if n >= minQuantileSamples && sw > 0 {
			out[phase] = sx / sw
		}
	}
	return out[0], out[1]
}
