package diagnose

import (
	"context"
	"fmt"
	"sync"
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

// LoadInput reads everything the analysis of one window needs. Curves and
// events come first; they locate the spike, so that only the samples the
// analysis uses (an hour before the onset to the end of the spike) are
// read — in parallel slices, the bulk of the I/O.
func LoadInput(ctx context.Context, st *store.Store, w correlate.Window, scope correlate.Scope, slo SLOFunc) (correlate.Input, error) {
	in := correlate.Input{Window: w, Scope: scope, Step: 15 * time.Second, SLO: slo}
	var err error
	cf := store.CurveFilter{From: w.From.Add(-curveLead), To: w.To}
	if span := cf.To.Sub(cf.From); span > maxFineWindow {
		// A window open for days: at most maxCurvePoints per curve, on a
		// whole number of minutes, latency keeping each bucket's peak.
		cf.Step = (span/maxCurvePoints + time.Minute - 1).Truncate(time.Minute)
		cf.MaxRoles = store.PeakRoles
	}
	in.Curves, err = st.Curves(ctx, cf)
	if err != nil {
		return in, fmt.Errorf("load curves: %w", err)
	}
	in.Step = stepOf(in.Curves)
	in.Events, err = st.Events(ctx, store.EventFilter{From: w.From.Add(-eventLead), To: w.To, Limit: maxAnalysisEvents})
	if err != nil {
		return in, fmt.Errorf("load events: %w", err)
	}
	from, to, ok := correlate.SampleSpan(in)
	if !ok {
		from, to = w.From.Add(-sampleLead), w.To
	}
	thin, keep, err := thinning(ctx, st, from, to)
	if err != nil {
		return in, fmt.Errorf("load samples: %w", err)
	}
	in.Samples, err = loadSamples(ctx, st, store.SampleFilter{From: from, To: to, Bulk: true, Thin: thin, KeepAbove: keep}, 4)
	if err != nil {
		return in, fmt.Errorf("load samples: %w", err)
	}
	return in, nil
}

// maxFineWindow is the longest window whose curves an analysis reads at
// their own resolution (a day and its lead, as replays and most incidents
// are); past it (an incident open for days: an alert
// group that keeps firing, a manual incident without an end) they are
// downsampled to at most maxCurvePoints points each, or every pass would
// read more than the last until memory ran out.
const (
	maxFineWindow  = 26 * time.Hour
	maxCurvePoints = 6240 // 26 h at 15 s
)

// maxAnalysisEvents bounds how many events one analysis reads: a crash
// loop posts restarts by the thousand. Changes people make are kept first
// (see store.Events).
const maxAnalysisEvents = 20_000

// maxAnalysisSamples bounds how many samples one analysis reads. Past it,
// the fast samples are thinned (and re-weighted): the statistics the
// analysis computes need thousands of samples, not millions, and the
// slow ones — the interesting tail — are all kept.
var maxAnalysisSamples int64 = 300_000 // a var for tests only

// thinning decides how to thin [from, to): 1 (read everything) up to
// maxAnalysisSamples, else 1 in k of the samples faster than the window's
// estimated P90 — or, when that slowest tenth alone is over half the
// bound, faster than the quantile that leaves half the bound above it.
// The slow tail kept whole was a tenth of the window: in an incident open
// for days, millions of samples a pass, growing with its age.
func thinning(ctx context.Context, st *store.Store, from, to time.Time) (k int, keepAbove float64, err error) {
	est, p90, err := st.SampleVolume(ctx, from, to)
	if err != nil || est <= maxAnalysisSamples {
		return 1, 0, err
	}
	keepAbove = p90
	if half := maxAnalysisSamples / 2; est/10 > half {
		if keepAbove, err = st.SampleQuantile(ctx, from, to, 1-float64(half)/float64(est)); err != nil {
			return 0, 0, err
		}
	}
	return int((est + maxAnalysisSamples - 1) / maxAnalysisSamples), keepAbove, nil
}

// loadSamples reads f's window in parts parallel scans, one connection
// each: the server's scan and the client's decoding overlap, which on two
// cores measured about twice as fast with four parts as with one.
func loadSamples(ctx context.Context, st *store.Store, f store.SampleFilter, parts int) ([]correlate.Sample, error) {
	from, to := f.From, f.To
	span := to.Sub(from)
	if parts < 1 || span < time.Minute {
		parts = 1
	}
	out := make([][]correlate.Sample, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := 0; i < parts; i++ {
		lo := from.Add(span * time.Duration(i) / time.Duration(parts))
		hi := from.Add(span * time.Duration(i+1) / time.Duration(parts))
		if i == parts-1 {
			hi = to
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := f
			part.From, part.To = lo, hi
			out[i], errs[i] = st.Samples(ctx, part)
		}()
	}
	wg.Wait()
	n := 0
	for i, e := range errs {
		if e != nil {
			return nil, e
		}
		n += len(out[i])
	}
	all := make([]correlate.Sample, 0, n)
	for _, part := range out {
		all = append(all, part...)
	}
	return all, nil
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
