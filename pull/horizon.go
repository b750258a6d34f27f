package pull

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Prometheus answers an instant it holds no sample for yet with the
// series' last value (its 5-minute lookback). A backend whose samples land
// minutes late — remote-write replaying its senders' buffer, a Prometheus
// whose clock is behind — thus answers the live pull's newest steps with
// stand-ins, and the round's overlap re-reads too little to replace them
// once the real samples come. So each round first asks for the newest
// sample each source's selectors hold (max(timestamp(selector)), one
// query for all of them), and a source is pulled no further than that.
// On a backend keeping up the horizon is past now − delay and changes
// nothing.

// horizonHold is how far back the horizon of a source whose selectors
// hold no sample within the lookback (a backend stalled for more than 5
// minutes) is looked for: a stall that ends within it loses nothing; a
// source whose samples stopped longer ago (a metric removed) is pulled up
// to now − delay, as Prometheus answers then. Only selectors with no
// sample at now are asked again over it (a subquery of one step a minute).
const horizonHold = 30 * time.Minute

// kubeHorizonExpr holds the selectors whose newest samples are the
// kube-state-metrics events source's horizon: what kube-state-metrics
// publishes for every deployment and pod.
const kubeHorizonExpr = `kube_deployment_spec_replicas or kube_pod_info`

// horizonProbe names the probe's queries in errors and logs.
const horizonProbe = "newest samples"

// maxProbeSelectors bounds the selectors of one horizon query.
const maxProbeSelectors = 50

// horizons returns, per query source, the time of the newest sample its
// selectors hold at now (the freshest of its selectors: one metric updated
// rarely must not hold the rest back), looked for horizonHold back. A
// source missing from the map has no horizon: it is pulled up to now −
// delay, as when the probe fails (then logged once until one succeeds).
func (p *Puller) horizons(ctx context.Context, sources []string, now time.Time) map[string]time.Time {
	var sels []string
	index := map[string]int{}
	of := map[string][]int{}
	for _, src := range sources {
		expr := p.config().scoped(kubeHorizonExpr)
		if src != EventsSource {
			q, ok := p.query(src)
			if !ok {
				continue
			}
			expr = q.Expr
		}
		ss, err := vectorSelectors(expr)
		if err != nil {
			continue // Prometheus accepted it (Validate): it is pulled without a horizon
		}
		for _, s := range ss {
			i, ok := index[s]
			if !ok {
				i = len(sels)
				index[s] = i
				sels = append(sels, s)
			}
			of[src] = append(of[src], i)
		}
	}
	newest := make([]float64, len(sels)) // Unix seconds; 0: no sample
	all := make([]int, len(sels))
	for i := range all {
		all[i] = i
	}
	err := p.probeNewest(ctx, sels, all, 0, now, newest)
	if err == nil {
		// Only the sources none of whose selectors answered are looked
		// for further back (a stalled backend), not a fresh source's
		// alternative selectors that are absent on this fleet.
		var stale []int
		asked := map[int]bool{}
		for _, idx := range of {
			if newestOf(newest, idx) > 0 {
				continue
			}
			for _, i := range idx {
				if !asked[i] {
					asked[i] = true
					stale = append(stale, i)
				}
			}
		}
		err = p.probeNewest(ctx, sels, stale, horizonHold, now, newest)
	}
	if err != nil {
		if !p.horizonWarned.Swap(true) && ctx.Err() == nil {
			p.log.Warn("pull: cannot ask the newest samples; pulling up to now − delay (a lagging backend's stand-in values may be stored)", "err", err)
		}
		return nil
	}
	p.horizonWarned.Store(false)
	out := map[string]time.Time{}
	for src, idx := range of {
		if best := newestOf(newest, idx); best > 0 {
			out[src] = time.UnixMilli(int64(math.Round(best * 1000))).UTC()
		}
	}
	return out
}

// newestOf is the newest of newest[i] for i in idx (0: none).
func newestOf(newest []float64, idx []int) float64 {
	best := 0.0
	for _, i := range idx {
		best = max(best, newest[i])
	}
	return best
}

// probeNewest sets newest[i], for each i in which, to the newest sample
// timestamp (Unix seconds) of sels[i]'s series: within Prometheus'
// lookback of now, or over the window before it (a subquery of one step
// a minute) when window > 0; it leaves 0 where there is none.
func (p *Puller) probeNewest(ctx context.Context, sels []string, which []int, window time.Duration, now time.Time, newest []float64) error {
	for lo := 0; lo < len(which); lo += maxProbeSelectors {
		batch := which[lo:min(lo+maxProbeSelectors, len(which))]
		terms := make([]string, len(batch))
		for n, i := range batch {
			ts := "timestamp(" + sels[i] + ")"
			if window > 0 {
				ts = fmt.Sprintf("max_over_time(%s[%ds:1m])", ts, int64(window/time.Second))
			}
			terms[n] = fmt.Sprintf(`label_replace(max(%s), "waterline_selector", "%d", "", "")`, ts, i)
		}
		v, err := p.prom.instant(ctx, horizonProbe, strings.Join(terms, " or "), now)
		if err != nil {
			return err
		}
		for _, s := range v {
			i, err := strconv.Atoi(string(s.Metric["waterline_selector"]))
			if err == nil && i >= 0 && i < len(newest) && !math.IsNaN(float64(s.Value)) {
				newest[i] = max(newest[i], float64(s.Value))
			}
		}
	}
	return nil
}

// pullEnd is where a source's round ends: end, or the step after its
// horizon's last grid time when that comes first (the zero horizon: none).
func pullEnd(end, horizon time.Time, step time.Duration) time.Time {
	if horizon.IsZero() {
		return end
	}
	if h := alignDown(horizon, step).Add(step); h.Before(end) {
		return h
	}
	return end
}
