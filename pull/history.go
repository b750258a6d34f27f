package pull

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/waterline-dev/waterline/store"
)

// Progress reports how far a history pull is.
type Progress struct {
	Sources, SourcesDone int
	Chunks, ChunksDone   int
	Points               int64 // points written so far
	Events               int   // events derived so far (new or refreshed)
	Elapsed              time.Duration
	// NoSeries lists the query sources whose chunks, all pulled, held no
	// series at all: their metrics are not in Prometheus over the range,
	// or the query's labels do not match them. Set when History returns.
	NoSeries []string
}

// History pulls [from, to] (to included when it falls on the step grid)
// for every source, chunk by chunk, and returns when all is committed.
// Each source's progress is a history gap in Postgres, advanced with each
// committed chunk, so an interrupted run resumes where it stopped when
// started again with the same range; a completed range is pulled again
// (idempotently: points are upserted, event ids are deterministic).
// Sources run Parallelism at a time; a chunk that fails is retried with
// backoff, and the first source that still fails stops the run with an
// error naming it. progress (may be nil) is called after every chunk.
func (p *Puller) History(ctx context.Context, from, to time.Time, progress func(Progress)) (Progress, error) {
	step := p.config().Step
	w := window{alignDown(from, step), alignDown(to, step).Add(step)}
	if !w.from.Before(w.to) || to.Before(from) {
		return Progress{}, fmt.Errorf("pull: empty range %s – %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	start := time.Now()
	now := p.now()
	_ = p.st.PruneFilledGaps(ctx, now.Add(-7*24*time.Hour))

	type job struct {
		source string
		gap    store.PullGap
		chunks []window
	}
	var jobs []job
	var pr Progress
	// Resume when the last run over this range did not finish: its sources
	// that did finish are done, the others go on from their progress.
	latest, err := p.st.HistoryGaps(ctx, w.from, w.to)
	if err != nil {
		return pr, err
	}
	resume := false
	for _, src := range p.currentSources() {
		if g, ok := latest[src]; ok && g.FilledAt == nil {
			resume = true
		}
	}
	for _, src := range p.currentSources() {
		g, ok := latest[src]
		if !resume || !ok {
			if g, err = p.st.OpenHistoryGap(ctx, src, w.from, w.to, now); err != nil {
				return pr, err
			}
		}
		var cs []window
		if g.FilledAt == nil {
			cs = chunks(g.Done, g.To, step, p.config().MaxChunk)
		}
		jobs = append(jobs, job{src, g, cs})
		pr.Chunks += len(cs)
	}
	pr.Sources = len(jobs)
	var mu sync.Mutex
	report := func(f func(*Progress)) {
		mu.Lock()
		defer mu.Unlock()
		f(&pr)
		pr.Elapsed = time.Since(start)
		if progress != nil {
			progress(pr)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.config().Parallelism)
	for _, j := range jobs {
		g.Go(func() error {
			var points int64
			defer func() {
				if len(j.chunks) > 0 && points == 0 && j.source != EventsSource && gctx.Err() == nil {
					report(func(pr *Progress) { pr.NoSeries = append(pr.NoSeries, j.source) })
				}
			}()
			halvedOnce := false
			for cs := j.chunks; len(cs) > 0; cs = cs[1:] {
				c, end := cs[0], cs[len(cs)-1].to
				half := c.to.Sub(c.from) / 2
				canHalve := half >= minChunkSteps*step
				var b *batch
				err := retry(gctx, 4, func() error {
					var err error
					if b, err = p.fetch(gctx, j.source, c); err != nil {
						if big, _ := tooBig(err); big && canHalve {
							return splitChunk{err} // no use asking the same range again
						}
						return err
					}
					return p.commit(gctx, b, func(tx *store.Store, points int64) error {
						return tx.AdvanceGap(gctx, j.gap.ID, c.to, p.now())
					})
				})
				// Too much for Prometheus at once (many series, its
				// max-samples or timeout): the rest of the job in halves, as
				// the live loop does; a rerun resumed at the same chunk and
				// failed the same way for good.
				if big, once := tooBig(err); err != nil && canHalve && gctx.Err() == nil && (big || once && !halvedOnce) {
					halvedOnce = halvedOnce || once
					rest := chunks(c.from, end, step, half)
					report(func(pr *Progress) { pr.Chunks += len(rest) - len(cs) })
					cs = append([]window{{}}, rest...) // the loop's cs[1:] drops the placeholder
					continue
				}
				if err != nil {
					_ = p.st.NoteGapError(context.WithoutCancel(ctx), j.gap.ID, err.Error())
					p.met.failed(j.source, p.now())
					return fmt.Errorf("pull %s over %s – %s: %w", j.source, c.from.Format(time.RFC3339), c.to.Format(time.RFC3339), err)
				}
				p.met.pulled(j.source, c.to, p.now(), b.points())
				points += b.points()
				report(func(pr *Progress) {
					pr.ChunksDone++
					pr.Points += b.points()
					pr.Events += len(b.events)
				})
			}
			report(func(pr *Progress) { pr.SourcesDone++ })
			return nil
		})
	}
	err = g.Wait()
	mu.Lock()
	defer mu.Unlock()
	pr.Elapsed = time.Since(start)
	if err != nil {
		pr.NoSeries = nil // unfinished sources say nothing
	}
	sort.Strings(pr.NoSeries)
	return pr, err
}

// retry runs f up to attempts times with exponential backoff and jitter,
// giving up at once when Prometheus rejected the query (retrying a bad
// query cannot help) or ctx ends.
func retry(ctx context.Context, attempts int, f func() error) error {
	var err error
	for i := 0; i < attempts; i++ {
		if err = f(); err == nil {
			return nil
		}
		var qe *QueryError
		var sc splitChunk
		if errors.As(err, &qe) && qe.Rejected || errors.As(err, &sc) || ctx.Err() != nil {
			return err
		}
		if i < attempts-1 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(backoff(i+1, time.Second, 30*time.Second)):
			}
		}
	}
	return err
}

// splitChunk wraps a fetch error that asking a shorter range may cure:
// retry gives up on it at once, for the caller to ask in halves.
type splitChunk struct{ error }

func (s splitChunk) Unwrap() error { return s.error }
