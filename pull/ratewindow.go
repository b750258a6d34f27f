package pull

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The presets are written for 15 s scrapes: rate(x[1m]). rate() needs two
// samples inside its window, so over scrapes of 1 min a 1m window finds at
// most one (Prometheus 3 leaves the window's left edge out; Prometheus 2
// finds a second only when a scrape lands exactly on it) and over 2 min
// none: the presets then yield no latency, QPS or stage curves at all, and
// nothing says why. With rate_window unset (or "auto") the puller measures
// each preset query's scrape interval in Prometheus and widens the window
// to two intervals, never below 1m — so 15 s and 30 s scrapes keep 1m, 1
// min scrapes get 2m, 2 min get 4m. Grafana's $__rate_interval solves the
// same problem with a configured scrape interval; here it is measured.

const (
	defaultRateWindow = time.Minute
	// rateProbeSpan is the range the interval is counted over: an hour
	// tells 5 min scrapes (12 samples) from 4 min (15).
	rateProbeSpan = time.Hour
	// rateProbeTTL is how long a measured interval holds (at the times
	// pulled, which for a history pull are hours apart); an interval not
	// found is asked again after rateProbeRetry.
	rateProbeTTL   = time.Hour
	rateProbeRetry = 10 * time.Minute
)

// rangeSelectorRE finds the range selectors the presets write with [1m]:
// a metric name and its optional label matchers.
var rangeSelectorRE = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*(?:\{[^{}]*\})?)\[1m\]`)

// commonIntervals are the scrape intervals people configure; a measured
// interval within 10 % of one is that one (a closed range counts one
// sample more than an open one).
var commonIntervals = []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour}

// rateWindows measures scrape intervals per range selector and picks each
// preset query's window. Safe for concurrent use.
type rateWindows struct {
	mu       sync.Mutex
	interval map[string]probed        // by selector
	chosen   map[string]time.Duration // by query name
	logged   map[time.Duration]bool
}

type probed struct {
	interval time.Duration // 0: no samples found
	at       time.Time     // the instant probed
}

func newRateWindows() *rateWindows {
	return &rateWindows{interval: map[string]probed{}, chosen: map[string]time.Duration{}, logged: map[time.Duration]bool{}}
}

// autoRate reports whether q's window follows the measured interval: a
// preset query with a rate window, when rate_window is auto.
func (c *Config) autoRate(q Query) bool {
	return c.RateWindow == 0 && strings.HasPrefix(q.Origin, "preset ") && strings.Contains(q.Expr, "[1m]")
}

// expr is q's expression as pulled at the instant at: with an automatic
// rate window, [1m] becomes two of the slowest scrape intervals among its
// selectors, at least 1m and the pull step. A probe that fails fails the fetch, which is
// retried: pulling on with a guessed window could store a hole.
func (p *Puller) expr(ctx context.Context, q Query, at time.Time) (string, error) {
	if !p.config().autoRate(q) {
		return q.Expr, nil
	}
	w := defaultRateWindow
	for _, m := range rangeSelectorRE.FindAllStringSubmatch(q.Expr, -1) {
		iv, err := p.scrapeInterval(ctx, m[1], at)
		if err != nil {
			return "", err
		}
		if 2*iv > w {
			w = 2 * iv
		}
	}
	// Each point stands for its whole step: a 1m window at 5-minute steps
	// read one minute of five, and a spike between two points vanished.
	w = max(w, p.config().Step)
	p.rates.mu.Lock()
	p.rates.chosen[q.Name] = w
	first := !p.rates.logged[w] && w != defaultRateWindow
	p.rates.logged[w] = true
	p.rates.mu.Unlock()
	if first { // once per window, not once per source
		p.log.Info("pull: the presets' rate() window follows the measured scrape interval", "rate_window", w, "source", q.Name)
	}
	if w == defaultRateWindow {
		return q.Expr, nil
	}
	return strings.ReplaceAll(q.Expr, "[1m]", fmt.Sprintf("[%ds]", int64(w/time.Second))), nil
}

// scrapeInterval is the sample interval of selector's longest-scraped series over
// the hour before at, 0 when it has no samples there.
func (p *Puller) scrapeInterval(ctx context.Context, selector string, at time.Time) (time.Duration, error) {
	r := p.rates
	r.mu.Lock()
	pr, ok := r.interval[selector]
	r.mu.Unlock()
	ttl := rateProbeTTL
	if pr.interval == 0 {
		ttl = rateProbeRetry
	}
	if ok && at.Sub(pr.at).Abs() < ttl {
		return pr.interval, nil
	}
	// The series with the most samples: pods started within the hour
	// (a scale-out, a rollout) have fewer, and their median read a 15 s
	// scrape as 3 minutes.
	expr := fmt.Sprintf("max(count_over_time(%s[%ds]))", selector, int64(rateProbeSpan/time.Second))
	v, err := p.prom.instant(ctx, "rate window probe", expr, at)
	if err != nil {
		return 0, fmt.Errorf("measuring the scrape interval of %s: %w", selector, err)
	}
	iv := time.Duration(0)
	if len(v) > 0 {
		iv = intervalFromCount(rateProbeSpan, float64(v[0].Value))
	}
	r.mu.Lock()
	r.interval[selector] = probed{interval: iv, at: at}
	r.mu.Unlock()
	return iv, nil
}

// intervalFromCount turns a count of samples over span into the scrape
// interval, snapped to a common one within 10 %, else rounded up to whole
// seconds. Fewer than two samples say nothing.
func intervalFromCount(span time.Duration, count float64) time.Duration {
	if math.IsNaN(count) || count < 2 {
		return 0
	}
	iv := time.Duration(float64(span) / count)
	for _, c := range commonIntervals {
		if math.Abs(float64(iv-c)) <= 0.1*float64(c) {
			return c
		}
	}
	return iv.Truncate(time.Second) + time.Second
}

// keep forgets the windows of queries not named (a config that dropped
// them), so /metrics stops exporting them.
func (r *rateWindows) keep(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.chosen {
		if !slices.Contains(names, n) {
			delete(r.chosen, n)
		}
	}
}

// RateWindows is the window each automatic preset query used last, for
// the logs and tests.
func (p *Puller) RateWindows() map[string]time.Duration {
	p.rates.mu.Lock()
	defer p.rates.mu.Unlock()
	out := make(map[string]time.Duration, len(p.rates.chosen))
	for k, v := range p.rates.chosen {
		out[k] = v
	}
	return out
}
