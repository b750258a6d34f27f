package incident

import (
	"math"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// View is what an incident's page is drawn from, and so what a freeze
// keeps: the incident, its newest ready analysis (nil when there is
// none), and whether the page reads the frozen copy.
type View struct {
	Incident store.Incident
	Analysis *correlate.Analysis
	Frozen   bool
}

// Window is the page's default window: half an hour before the onset (or
// the start), ten minutes after the end, never past now unless frozen.
func (v View) Window(now time.Time) (time.Time, time.Time) {
	// An open incident's window ends now; on a scrape-step grid, so that
	// requests within the same 15 s share cache entries.
	now = now.Truncate(15 * time.Second)
	start := v.Incident.Start
	if v.Analysis != nil && v.Analysis.Onset != nil && v.Analysis.Onset.Before(start) {
		start = *v.Analysis.Onset
	}
	end := now
	if v.Incident.End != nil {
		end = *v.Incident.End
	}
	from, to := start.Add(-30*time.Minute), end.Add(10*time.Minute)
	if !v.Frozen && to.After(now) {
		to = now
	}
	if !to.After(from.Add(5 * time.Minute)) {
		to = from.Add(5 * time.Minute)
	}
	return from.UTC(), to.UTC()
}

// During is what the sample table shows by default: from the onset (or
// the start) to the end.
func (v View) During(now time.Time) (time.Time, time.Time) {
	now = now.Truncate(15 * time.Second)
	from := v.Incident.Start
	if v.Analysis != nil && v.Analysis.Onset != nil {
		from = *v.Analysis.Onset
	}
	to := now
	if v.Incident.End != nil {
		to = *v.Incident.End
	}
	if !to.After(from) {
		to = from.Add(time.Minute)
	}
	return from, to
}

// SlowThresholds returns the analysis' per-model slowness thresholds and a
// default for other models (the lowest threshold: conservative). Without
// the samples' own, the baseline P99 is the line; a baseline that is a
// mean or a P95 is none (most normal requests lie above a mean).
func (v View) SlowThresholds() (map[string]float64, float64) {
	an := v.Analysis
	if an == nil || len(an.Samples.SlowMs) == 0 {
		p99 := an != nil && (len(an.Impact) == 0 || an.Impact[0].Quantile == "" || an.Impact[0].Quantile == "P99")
		if p99 && an.P99BeforeMs > 0 {
			return nil, an.P99BeforeMs
		}
		return nil, 0
	}
	def := math.Inf(1)
	for _, ms := range an.Samples.SlowMs {
		def = math.Min(def, ms)
	}
	return an.Samples.SlowMs, def
}

// ChartStep cuts a window into about 240 buckets of whole 15-second steps:
// enough for a laptop-wide chart, and few points per curve. Pages draw
// at this resolution, so a freeze keeps it.
func ChartStep(from, to time.Time) time.Duration {
	const q = 15 * time.Second
	step := to.Sub(from) / 240
	step = (step + q - 1) / q * q
	return max(step, q)
}
