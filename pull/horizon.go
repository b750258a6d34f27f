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
	err := p.probeNewest(ctx, sels, all, "%s", now, newest)
	if err == nil {
		var stale []int
		for i, v := range newest {
			if v == 0 {
				stale = append(stale, i)
			}
		}
		err = p.probeNewest(ctx, sels, stale, fmt.Sprintf("max_over_time(timestamp(%%s)[%ds:1m])", int64(horizonHold/time.Second)), now, newest)
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
		best := 0.0
		for _, i := range idx {
			best = max(best, newest[i])
		}
		if best > 0 {
			out[src] = time.UnixMilli(int64(math.Round(best * 1000))).UTC()
		}
	}
	return out
}

// probeNewest sets newest[i], for each i in which, to the newest timestamp
// (Unix seconds) of form applied to sels[i] — timestamp(sel) or a
// subquery of it — maxed over its series, leaving 0 where there is none.
func (p *Puller) probeNewest(ctx context.Context, sels []string, which []int, form string, now time.Time, newest []float64) error {
	for lo := 0; lo < len(which); lo += maxProbeSelectors {
		batch := which[lo:min(lo+maxProbeSelectors, len(which))]
		terms := make([]string, len(batch))
		for n, i := range batch {
			ts := fmt.Sprintf(form, sels[i])
			if form == "%s" {
				ts = "timestamp(" + sels[i] + ")"
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
