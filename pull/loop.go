package pull

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/store"
)

// LeaseName is the advisory lock that elects the one puller among serve
// replicas.
const LeaseName = store.PullLease

// Run is the live pull loop of serve: it campaigns for the pull lease and,
// while it holds it, pulls every source up to now every interval. When
// every source of a round fails (Prometheus unreachable), the next round
// comes after an exponential backoff with jitter instead (see nextRound); the missed range is recorded as
// a gap and filled by the cursor's catch-up once Prometheus answers. When
// the lease is lost (its connection died) the replica stops pulling and
// campaigns again; another replica takes over. Run returns when ctx ends.
func (p *Puller) Run(ctx context.Context, interval time.Duration) error {
	retryLease := min(interval, 15*time.Second)
	for {
		lease, ok, err := p.st.TryLease(ctx, LeaseName)
		if err != nil && ctx.Err() == nil {
			p.log.Warn("pull: cannot campaign for the pull lease", "err", err)
		}
		if ok {
			p.met.setLeader(true)
			p.log.Info("pull: this replica is the puller", "interval", interval)
			p.lead(ctx, lease, interval)
			lease.Release()
			p.met.setLeader(false)
		}
		if !sleep(ctx, retryLease) {
			return nil
		}
	}
}

// lead pulls while the lease holds. The lease is checked every
// leaseWatch for as long as this replica leads, between rounds and during
// them, and a source still pulling from an earlier round (see tick) is
// cancelled with the rest as soon as it is found lost: a long catch-up
// after an outage must not go on writing, and advancing cursors, for
// minutes after another replica took over. lead returns once every source
// it started has stopped.
func (p *Puller) lead(ctx context.Context, lease *store.Lease, interval time.Duration) {
	lctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(leaseWatch)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				// A connection that does not answer within leaseWatch is
				// as good as lost (a half-open TCP session would hang).
				cctx, ccancel := context.WithTimeout(lctx, leaseWatch)
				err := lease.Check(cctx)
				ccancel()
				if err != nil && lctx.Err() == nil {
					cancel(fmt.Errorf("%w: %w", errLeaseLost, err))
					return
				}
			}
		}
	}()
	defer func() {
		cancel(nil)
		p.inflight.Wait()
		<-watched // the lease's connection is Run's again
	}()
	failures := 0
	for {
		if lctx.Err() != nil {
			if err := context.Cause(lctx); errors.Is(err, errLeaseLost) {
				p.log.Warn("pull: lost the pull lease; stopping until re-elected", "err", err)
			}
			return
		}
		failed, total, err := p.tick(lctx, interval)
		if err != nil && lctx.Err() != nil {
			continue
		}
		var wait time.Duration
		wait, failures = nextRound(failed, total, failures, interval)
		switch {
		case failures > 0:
			p.log.Warn("pull: round failed; backing off", "err", err, "failures", failures, "retry_in", wait.Round(time.Millisecond))
		case err != nil:
			p.log.Warn("pull: some sources failed; they catch up next round", "err", err, "failed", failed, "sources", total)
		}
		sleep(lctx, wait)
	}
}

// errLeaseLost is the cause of lead's end when the lease's check failed.
var errLeaseLost = errors.New("lost the pull lease")

// leaseWatch is how often a leader checks its lease.
var leaseWatch = 5 * time.Second

// nextRound says how long to wait before the next round and how many
// failed rounds in a row there have been. Only a round in which every
// source failed (Prometheus down) backs off, exponentially: one broken
// query, or one slow source, must not hold back the healthy ones, which
// would fall behind by minutes mid-incident. The failed sources are
// retried at the normal pace, and their cursor catches up when they heal.
func nextRound(failed, total, failures int, interval time.Duration) (time.Duration, int) {
	if failed == 0 || failed < total {
		return interval, 0
	}
	failures++
	return backoff(failures, time.Second, max(interval, 5*time.Minute)), failures
}

// Tick runs one round of the live loop: each source from its cursor (less
// the overlap, to settle values at the edge) up to now − delay, or its
// newest sample when that is older (horizon.go), in chunks.
// A source seen for the first time starts lookback ago. It returns the
// errors of the sources that failed, joined.
func (p *Puller) Tick(ctx context.Context) error {
	_, _, err := p.tick(ctx, 0)
	return err
}

// tick is Tick, also saying how many of how many sources failed. With
// wait > 0 (the live loop) it returns once every source is done or wait
// has passed: a source still pulling then (a query Prometheus is slow to
// answer, up to its timeout) goes on in the background, and the rounds
// after skip it until it is done. The round waited for every source, so
// one slow query held back every other source's pull by minutes. Only
// the sources done count in failed; a late one's error is recorded by
// tickSource all the same, and its points wake OnStored.
func (p *Puller) tick(ctx context.Context, wait time.Duration) (failed, total int, err error) {
	p.adoptNext() // a new config begins with a round, never inside one
	start := time.Now()
	now := p.now()
	// The pull health shows the sources this config pulls, not those an
	// earlier one did (they would read as failing and behind for ever).
	if err := p.st.RetirePullSources(ctx, p.currentSources(), now); err != nil && ctx.Err() == nil {
		p.log.Warn("pull: cannot record the sources pulled", "err", err)
	}
	end := alignDown(now.Add(-p.config().Delay), p.config().Step).Add(p.config().Step)
	var (
		mu    sync.Mutex
		errs  []error
		over  bool // the round has returned: a source done now is late
		wg    sync.WaitGroup
		slots = p.slots(p.config().Parallelism)
		// stored counts the round's points, to tell OnStored.
		stored int64
	)
	sources := p.currentSources()
	hz := p.horizons(ctx, sources, now)
	for _, src := range sources {
		if _, running := p.busy.LoadOrStore(src, true); running {
			continue // still at an earlier round's pull: one query per source at a time
		}
		wg.Add(1)
		p.inflight.Add(1)
		go func() {
			defer p.inflight.Done()
			defer wg.Done()
			defer p.busy.Delete(src)
			slots <- struct{}{}
			_, probed := hz[src]
			n, err := p.tickSource(ctx, src, now, pullEnd(end, hz[src], p.config().Step), probed)
			<-slots
			mu.Lock()
			late := over
			if !late {
				stored += n
				if err != nil {
					errs = append(errs, err)
				}
			}
			mu.Unlock()
			if late && err != nil && ctx.Err() == nil {
				p.log.Warn("pull: a source that outlasted its round failed; it catches up next round", "err", err)
			}
			if late && n > 0 && p.onStored != nil {
				p.onStored()
			}
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-all:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	} else {
		<-all
	}
	p.pods.forget() // this round's windows are not pulled again
	p.met.round(time.Since(start))
	mu.Lock()
	over = true
	failed, err, n := len(errs), errors.Join(errs...), stored
	mu.Unlock()
	if n > 0 && p.onStored != nil {
		p.onStored()
	}
	// A source still pulling has not failed: counted in total, a round
	// does not back off for the sources that failed beside it.
	return failed, len(sources), err
}

// tickSource pulls one source up to end and returns how many points it
// stored. probed: this round's probe found the source's newest sample
// (end is no later than it).
func (p *Puller) tickSource(ctx context.Context, src string, now, end time.Time, probed bool) (int64, error) {
	cursor, ok, err := p.st.PullCursor(ctx, src)
	if err != nil {
		return 0, err
	}
	var stored int64
	from := alignDown(now.Add(-p.config().Lookback), p.config().Step)
	if ok {
		from = alignDown(cursor.Add(-p.config().Overlap), p.config().Step)
	} else {
		cursor = from
	}
	p.met.cursorAt(src, cursor)
	halvedOnce := false
	cs := chunks(from, end, p.config().Step, p.config().MaxChunk)
	if len(cs) == 0 && probed && ok {
		// Pulled up to its newest sample (an idle metric): the probe that
		// said so is this round's query, and it succeeded. Without a chunk
		// to commit, an earlier round's error stayed in the pull health
		// until the metric had a fresh sample.
		if err := p.st.NotePullChecked(ctx, src, p.now()); err != nil {
			return 0, fmt.Errorf("%s: %w", src, err)
		}
		p.met.pulled(src, cursor, p.now(), 0)
	}
	for len(cs) > 0 {
		c := cs[0]
		b, err := p.fetch(ctx, src, c)
		if err == nil && b.held {
			p.log.Info("pull: kube-state-metrics knows no pod; replica curves wait for it", "source", src, "from", c.from, "to", c.to)
			break // pulled again next round, from the cursor
		}
		if err == nil {
			err = p.commit(ctx, b, func(tx *store.Store, points int64) error {
				return tx.AdvancePullCursor(ctx, src, c.to, p.now(), points)
			})
		}
		if errors.Is(err, errSourceDropped) {
			// A new config dropped the source while it was still pulling
			// from an earlier round (see tick): nothing pulls it any more,
			// so it is no error; its committed chunks stay, as its cursor.
			return stored, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return stored, ctx.Err()
			}
			// Too much for Prometheus at once (a catch-up after a long
			// outage): the rest in halves, rather than the same range
			// every round with the cursor stuck and live data unpulled.
			// Prometheus' own "too many samples" or query timeout (its 503
			// with errorType "timeout" included) may halve down to a few
			// steps; a timeout on our side or another 5xx (a stuck server
			// or proxy as likely as a big range) halves once a round, so a
			// dead backend costs one more query, not eight.
			half := c.to.Sub(c.from) / 2
			if big, once := tooBig(err); (big || once && !halvedOnce) && half >= minChunkSteps*p.config().Step {
				halvedOnce = halvedOnce || once
				p.log.Info("pull: chunk refused; asking in halves", "source", src, "from", c.from, "to", c.to, "err", err)
				cs = chunks(c.from, end, p.config().Step, half)
				continue
			}
			p.met.failed(src, p.now())
			if rerr := p.st.RecordPullError(context.WithoutCancel(ctx), src, maxTime(cursor, c.from), end, p.now(), err.Error(), true); rerr != nil {
				p.log.Warn("pull: cannot record the error", "source", src, "err", rerr)
			}
			return stored, fmt.Errorf("%s: %w", src, err)
		}
		cursor = c.to
		stored += b.points()
		p.met.pulled(src, c.to, p.now(), b.points())
		cs = cs[1:]
	}
	return stored, nil
}

// minChunkSteps is the shortest chunk a refused one is halved down to.
const minChunkSteps = 8

// tooBig says whether a failed query may succeed over a shorter range:
// big when the backend said it ran out of samples or time (Prometheus by
// its error type or its timeout's 503, others by their message: see
// classify); once when the query timed out on our side or got another
// 5xx, which a smaller range may cure as well as not. A refused expression or an unreachable server is
// neither.
func tooBig(err error) (big, once bool) {
	switch classify(err) {
	case failBig:
		return true, false
	case failServer:
		return false, true
	}
	return false, errors.Is(err, context.DeadlineExceeded)
}

// backoff is the wait before retry n (1-based): base·2^(n−1), capped, with
// ±50 % jitter so that replicas and sources do not retry in lockstep.
func backoff(n int, base, limit time.Duration) time.Duration {
	d := base << min(n-1, 30)
	if d <= 0 || d > limit {
		d = limit
	}
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
