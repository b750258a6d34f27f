package pull

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// Puller pulls the configured sources from one Prometheus into the store.
// It is safe for concurrent use; History and Run may run side by side
// (they keep separate progress: history gaps vs live cursors).
type Puller struct {
	// cfg is read through config(); SetConfig leaves a new one in next,
	// which a round adopts as it begins (a round reads cfg chunk by
	// chunk, and must not see its sources change under it).
	cfg, next atomic.Pointer[Config]
	prom      *prom
	st        *store.Store
	log       *slog.Logger
	now       func() time.Time

	pods   podCache
	mu     sync.Mutex
	ids    map[string]int64 // series id by curve key: series rows are never deleted
	idsCap int              // bound of ids (maxCachedSeries)
	met    *metrics
	// onStored is Options.OnStored.
	onStored func()
	// rates holds the measured scrape intervals behind automatic rate
	// windows (ratewindow.go).
	rates *rateWindows
	// horizonWarned: a failed horizon probe was logged (horizon.go).
	horizonWarned atomic.Bool
	// warned holds the sources whose answers' warnings were logged.
	warned sync.Map
	// busy holds the live loop's sources being pulled, inflight counts
	// them, and slotsCh bounds how many pull at once across rounds (a
	// round may end before its slow sources: see tick).
	busy     sync.Map
	inflight sync.WaitGroup
	slotsMu  sync.Mutex
	slotsCh  chan struct{}
}

// slots is the semaphore of n sources pulled at once by the live loop,
// shared by its rounds; a config changing n starts a new one (the
// sources still pulling keep their slots in the old).
func (p *Puller) slots(n int) chan struct{} {
	p.slotsMu.Lock()
	defer p.slotsMu.Unlock()
	if p.slotsCh == nil || cap(p.slotsCh) != n {
		p.slotsCh = make(chan struct{}, n)
	}
	return p.slotsCh
}

// Options are a Puller's optional collaborators.
type Options struct {
	Log *slog.Logger     // nil: discard
	Now func() time.Time // nil: time.Now; tests pin the clock to their fixtures
	// OnStored is called after a live round (Tick) that stored points,
	// outside any lock; it must not block (serve wakes the detector).
	OnStored func()
}

// New returns a Puller for cfg against the Prometheus-compatible API b,
// writing through st (which must run on a pool, not a transaction, for
// the leader lease).
func New(cfg *Config, b Backend, st *store.Store, opts Options) (*Puller, error) {
	pr, err := newProm(b)
	if err != nil {
		return nil, err
	}
	p := &Puller{prom: pr, st: st, log: opts.Log, now: opts.Now, ids: map[string]int64{}, idsCap: maxCachedSeries, met: newMetrics(), rates: newRateWindows(), onStored: opts.OnStored}
	p.cfg.Store(cfg)
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	pr.warned = p.noteWarnings
	return p, nil
}

// noteWarnings logs, once per source, the warnings of an answer stored all
// the same (PromQL's annotations: a rate over a gauge, a quantile out of
// range): the query may want a look; every round would say it again.
func (p *Puller) noteWarnings(source string, warnings []string) {
	if source == horizonProbe {
		return // about timestamp() over the selectors: the queries' own answers say theirs
	}
	if _, seen := p.warned.LoadOrStore(source, true); !seen {
		p.log.Warn("pull: Prometheus answered with warnings; the data is stored (logged once per source)",
			"source", source, "warnings", warnings)
	}
}

// config is the configuration in effect.
func (p *Puller) config() *Config { return p.cfg.Load() }

// SetConfig puts cfg in effect from the next round on (a round begun
// goes on with the config it began with). Sources it drops keep their
// cursors but leave the pull health (store.RetirePullSources); new ones
// start a lookback back, as at a first start.
func (p *Puller) SetConfig(cfg *Config) { p.next.Store(cfg) }

// adoptNext puts a config left by SetConfig in effect.
func (p *Puller) adoptNext() {
	if c := p.next.Swap(nil); c != nil {
		p.cfg.Store(c)
		p.met.keep(sourcesOf(c))
		p.rates.keep(sourcesOf(c))
	}
}

// Sources lists the names of every source: one per query, plus the
// kube-state-metrics events when enabled (of a config set to come into
// effect at the next round, if one is).
func (p *Puller) Sources() []string {
	cfg := p.next.Load() // the config about to be in effect, if one is
	if cfg == nil {
		cfg = p.config()
	}
	return sourcesOf(cfg)
}

// currentSources are the sources of the config in effect: what a round
// pulls.
func (p *Puller) currentSources() []string { return sourcesOf(p.config()) }

func sourcesOf(cfg *Config) []string {
	var out []string
	for _, q := range cfg.Queries {
		out = append(out, q.Name)
	}
	if cfg.Kube.Enabled {
		out = append(out, EventsSource)
	}
	return out
}

// batch is what one source yields for one window, committed at once.
type batch struct {
	curves  []pulledCurve
	events  []correlate.Event // the window's own events
	refresh []correlate.Event // events before the window, seen again with more detail
	dups    int
	// held: replica curves pulled while kube-state-metrics knew no pod at
	// all; the live loop stores none of them yet (see identityWait).
	held bool
}

func (b *batch) points() int64 {
	var n int64
	for _, c := range b.curves {
		n += int64(len(c.curve.Points))
	}
	return n
}

// fetch queries Prometheus for one source over w.
func (p *Puller) fetch(ctx context.Context, source string, w window) (*batch, error) {
	if source == EventsSource {
		return p.fetchKube(ctx, w)
	}
	q, ok := p.query(source)
	if !ok {
		return nil, fmt.Errorf("pull: %w: %q", errSourceDropped, source)
	}
	var pods podIndex
	if q.Level == correlate.LevelReplica {
		var err error
		if pods, err = p.podsFor(ctx, w); err != nil {
			return nil, err
		}
	}
	last := w.last(p.config().Step)
	expr, err := p.expr(ctx, q, last)
	if err != nil {
		return nil, err
	}
	m, err := p.prom.rangeQuery(ctx, q.Name, expr, w.from, last, p.config().Step)
	if err != nil {
		return nil, err
	}
	curves, dups, unscoped, invalid := curvesFrom(q, m, pods, p.config().ModelAliases, w)
	// Logged at warn level once per source (the next rounds skip the same
	// series: 2,880 lines a day at 30 s rounds said nothing new), then at
	// debug level.
	if invalid > 0 {
		p.log.Log(ctx, p.skipLevel(q.Name, 1), "series Postgres cannot store were skipped: a scope label value too long for a curve key (over 2 kB in all), or a label with a NUL byte or invalid UTF-8",
			"source", q.Name, "series", invalid)
	}
	if unscoped > 0 {
		p.log.Log(ctx, p.skipLevel(q.Name, 0), "series without the scope labels their level needs were skipped; check the query's labels mapping",
			"source", q.Name, "series", unscoped)
	}
	if dups > 0 && p.met.mergedSeries(q.Name, dups) {
		p.log.Warn("series of one query mapped onto the same curve and were merged (the later one's points kept): a label tells them apart that the query's scope mapping drops (namespace, cluster, GPU); aggregate by the scope's labels, or read one environment with match:",
			"source", q.Name, "series", dups)
	}
	// kube-state-metrics absent from Prometheus (a restart, a scrape gap)
	// leaves the pod join empty: stored now, these replica curves would go
	// under a second series without the model, version and node, splitting
	// each replica's curve, and the next round's overlap would store some
	// points under both. The live loop holds them back (the cursor stays)
	// and pulls them again with their pods, for identityWait at most: a
	// kube-state-metrics gone for good does not stop replica curves.
	held := q.Level == correlate.LevelReplica && p.config().Kube.Enabled && len(pods.byNS) == 0 &&
		len(curves) > 0 && w.from.After(p.now().Add(-identityWait))
	return &batch{curves: curves, dups: dups, held: held}, nil
}

// errSourceDropped: the config in effect has no such source. A source
// still pulling from an earlier round meets it when a new config dropped
// it mid-pull (tickSource stops it quietly).
var errSourceDropped = errors.New("no such source in the config")

// identityWait is how long the live loop holds back replica curves that
// no pod of kube-state-metrics can name (batch.held).
const identityWait = 15 * time.Minute

// skipLevel is the level of a log line about series of source skipped for
// reason (see metrics.firstSkip): warn the first time, debug after.
func (p *Puller) skipLevel(source string, reason int) slog.Level {
	if p.met.firstSkip(source, reason) {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

func (p *Puller) query(name string) (Query, bool) {
	for _, q := range p.config().Queries {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// commit writes a batch and, in the same transaction, the progress that
// says it is there: the cursor (or gap) never runs ahead of the data.
func (p *Puller) commit(ctx context.Context, b *batch, progress func(tx *store.Store, points int64) error) error {
	err := p.commitOnce(ctx, b, progress)
	if errors.Is(err, store.ErrSeriesGone) {
		// Maintenance deleted a series whose points had all expired while
		// its id sat in the cache (a pod name back after weeks): look the
		// ids up again, which creates the series anew.
		p.mu.Lock()
		clear(p.ids)
		p.mu.Unlock()
		err = p.commitOnce(ctx, b, progress)
	}
	return err
}

func (p *Puller) commitOnce(ctx context.Context, b *batch, progress func(tx *store.Store, points int64) error) error {
	ids, err := p.seriesIDs(ctx, b.curves)
	if err != nil {
		return err
	}
	var minT, maxT int64
	sp := make([]store.SeriesPoints, 0, len(b.curves))
	for _, c := range b.curves {
		pts := c.curve.Points
		if minT == 0 || pts[0].T < minT {
			minT = pts[0].T
		}
		if pts[len(pts)-1].T > maxT {
			maxT = pts[len(pts)-1].T
		}
		sp = append(sp, store.SeriesPoints{SeriesID: ids[c.curve.Key()], Points: pts})
	}
	if len(sp) > 0 {
		var days []time.Time
		for d := time.UnixMilli(minT).UTC().Truncate(24 * time.Hour); !d.After(time.UnixMilli(maxT)); d = d.Add(24 * time.Hour) {
			days = append(days, d)
		}
		if err := p.st.EnsurePartitions(ctx, store.TablePoints, days...); err != nil {
			return err
		}
	}
	return p.st.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.UpsertPoints(ctx, sp); err != nil {
			return err
		}
		if _, err := tx.UpsertDerivedEvents(ctx, b.events, false); err != nil {
			return err
		}
		if _, err := tx.UpsertDerivedEvents(ctx, b.refresh, true); err != nil {
			return err
		}
		return progress(tx, b.points())
	})
}

// seriesIDs returns the series id of every curve, creating series once.
func (p *Puller) seriesIDs(ctx context.Context, curves []pulledCurve) (map[string]int64, error) {
	out := make(map[string]int64, len(curves))
	var missing []store.SeriesDef
	p.mu.Lock()
	for _, c := range curves {
		k := c.curve.Key()
		if id, ok := p.ids[k]; ok {
			out[k] = id
		} else {
			missing = append(missing, store.SeriesDef{Curve: c.curve, Labels: c.labels})
		}
	}
	p.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	ids, err := p.st.EnsureSeries(ctx, missing)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.ids)+len(ids) > p.idsCap {
		// Pods come and go with every rollout, and their series with them:
		// start over rather than grow for ever (EnsureSeries is idempotent,
		// so a forgotten id costs one lookup).
		clear(p.ids)
	}
	for k, id := range ids {
		p.ids[k] = id
		out[k] = id
	}
	p.mu.Unlock()
	return out, nil
}

// maxCachedSeries bounds the series id cache: some 20 MB of keys.
const maxCachedSeries = 100_000
