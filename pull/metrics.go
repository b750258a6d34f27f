package pull

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics is the puller's health as this replica sees it, served on
// /metrics. Every replica exports it; only the leader's moves, and only
// the leader exports lag and open gaps: a replica that lost the lease
// forgets its cursors (its lag grew forever, and a lag alert fired after
// every failover), and a new config forgets the sources it drops.
type metrics struct {
	mu      sync.Mutex
	leader  bool
	sources map[string]*sourceHealth
	rounds  prometheus.Histogram
}

type sourceHealth struct {
	cursor, lastSuccess time.Time
	errors, points      float64
	merged              float64 // series that mapped onto a curve another series of the query had
	failing             bool    // the last attempt failed: an outage gap is open
	// skipWarned: the source's skipped series (unscoped, unstorable) were
	// logged at warn level; later rounds say it at debug level only.
	skipWarned [2]bool
}

func newMetrics() *metrics {
	return &metrics{sources: map[string]*sourceHealth{}, rounds: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "waterline_pull_round_duration_seconds",
		Help:    "Duration of one round of the live pull loop over all sources.",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	})}
}

func (m *metrics) src(name string) *sourceHealth {
	s := m.sources[name]
	if s == nil {
		s = &sourceHealth{}
		m.sources[name] = s
	}
	return s
}

func (m *metrics) setLeader(b bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leader = b
	if !b {
		for _, s := range m.sources {
			s.cursor, s.failing = time.Time{}, false
		}
	}
}

// keep forgets the sources not named (a config that dropped them).
func (m *metrics) keep(names []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[string]bool{}
	for _, n := range names {
		live[n] = true
	}
	for n := range m.sources {
		if !live[n] {
			delete(m.sources, n)
		}
	}
}

func (m *metrics) cursorAt(name string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.src(name); t.After(s.cursor) {
		s.cursor = t
	}
}

func (m *metrics) pulled(name string, cursor, now time.Time, points int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.src(name)
	if cursor.After(s.cursor) {
		s.cursor = cursor
	}
	s.lastSuccess, s.failing = now, false
	s.points += float64(points)
}

func (m *metrics) failed(name string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.src(name)
	s.errors++
	s.failing = true
}

// mergedSeries counts n series of a source's answer that mapped onto a
// curve another of its series had, and says whether they are the source's
// first (to log once).
func (m *metrics) mergedSeries(name string, n int) (first bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.src(name)
	first = s.merged == 0
	s.merged += float64(n)
	return first
}

// firstSkip says whether the source's series skipped for reason (0:
// unscoped, 1: unstorable) are its first such: a round pulls the same
// series as the last one, and saying it every round said nothing new.
func (m *metrics) firstSkip(name string, reason int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.src(name)
	first := !s.skipWarned[reason]
	s.skipWarned[reason] = true
	return first
}

func (m *metrics) round(d time.Duration) { m.rounds.Observe(d.Seconds()) }

var (
	descLeader  = prometheus.NewDesc("waterline_pull_leader", "1 while this replica holds the pull lease and runs the pull loop.", nil, nil)
	descSuccess = prometheus.NewDesc("waterline_pull_last_success_timestamp_seconds", "When a pull of the source last succeeded.", []string{"source"}, nil)
	descLag     = prometheus.NewDesc("waterline_pull_lag_seconds", "How far the source's cursor is behind now.", []string{"source"}, nil)
	descErrors  = prometheus.NewDesc("waterline_pull_errors_total", "Failed pulls of the source.", []string{"source"}, nil)
	descPoints  = prometheus.NewDesc("waterline_pull_points_total", "Curve points written for the source.", []string{"source"}, nil)
	descGaps    = prometheus.NewDesc("waterline_pull_open_gaps", "Sources whose last pull failed, leaving a gap to fill.", nil, nil)
	descMerged  = prometheus.NewDesc("waterline_pull_merged_series_total", "Series of the source's answers that mapped onto the same curve as another series (the labels that tell them apart are not in the query's scope mapping); the later one's points were kept.", []string{"source"}, nil)
	descRate    = prometheus.NewDesc("waterline_pull_rate_window_seconds", "The rate() window a preset source was last pulled with (rate_window: auto: two measured scrape intervals, at least 60).", []string{"source"}, nil)
)

// collector exposes metrics with the puller's clock (lag is relative to
// the time the data is about, which tests pin).
type collector struct {
	m     *metrics
	rates *rateWindows
	now   func() time.Time
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeader, descSuccess, descLag, descErrors, descPoints, descMerged, descGaps, descRate} {
		ch <- d
	}
	c.m.rounds.Describe(ch)
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	leader := 0.0
	if c.m.leader {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, leader)
	now := c.now()
	gaps := 0.0
	for name, s := range c.m.sources {
		if !s.lastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(descSuccess, prometheus.GaugeValue, float64(s.lastSuccess.UnixMilli())/1000, name)
		}
		if !s.cursor.IsZero() {
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, now.Sub(s.cursor).Seconds(), name)
		}
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, s.errors, name)
		ch <- prometheus.MustNewConstMetric(descPoints, prometheus.CounterValue, s.points, name)
		ch <- prometheus.MustNewConstMetric(descMerged, prometheus.CounterValue, s.merged, name)
		if s.failing {
			gaps++
		}
	}
	ch <- prometheus.MustNewConstMetric(descGaps, prometheus.GaugeValue, gaps)
	c.m.rounds.Collect(ch)
	c.rates.mu.Lock()
	defer c.rates.mu.Unlock()
	for name, w := range c.rates.chosen {
		ch <- prometheus.MustNewConstMetric(descRate, prometheus.GaugeValue, w.Seconds(), name)
	}
}

// RegisterMetrics registers the puller's health metrics (leader, last
// success, lag, errors, points and merged series per source, open gaps, round duration,
// automatic rate windows)
// on reg — serve passes the registry that /metrics serves.
func (p *Puller) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(collector{m: p.met, rates: p.rates, now: p.now})
}
