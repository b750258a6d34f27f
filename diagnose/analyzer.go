package diagnose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
)

// AnalyzerOptions configure an Analyzer; zero fields take defaults.
type AnalyzerOptions struct {
	SLO     SLOFunc
	Log     *slog.Logger
	Refresh time.Duration    // how often open incidents are checked for new data; default 30s
	Now     func() time.Time // default time.Now
	// OnReady, if set, is called after a new analysis version is stored,
	// with the previous version's top cause category ("" for the first).
	OnReady func(incidentID int64, version int, prevTop, newTop string)
}

// Analyzer analyses incidents in the background: a queue of incident ids
// fed by Enqueue (incident created or changed) and by a periodic check of
// open incidents whose window received new data. One worker runs at a
// time, so versions of one incident never race.
type Analyzer struct {
	st    *store.Store
	opt   AnalyzerOptions
	queue *incident.Queue
}

// NewAnalyzer returns an Analyzer over st.
func NewAnalyzer(st *store.Store, opt AnalyzerOptions) *Analyzer {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Refresh <= 0 {
		opt.Refresh = 30 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SLO == nil {
		opt.SLO = func(string) (float64, bool) { return 0, false }
	}
	return &Analyzer{st: st, opt: opt, queue: incident.NewQueue(1024)}
}

// Enqueue asks for an incident to be (re)analysed. It never blocks: if the
// queue is full, the periodic check catches up.
func (a *Analyzer) Enqueue(id int64) { a.queue.Add(id) }

// Run works the queue, and every Refresh queues the open incidents, until
// ctx ends.
func (a *Analyzer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(a.opt.Refresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				a.enqueueStale(ctx)
			}
		}
	})
	a.queue.Work(ctx, func(ctx context.Context, id int64) {
		if _, err := a.Analyze(ctx, id, false); err != nil && ctx.Err() == nil {
			a.opt.Log.Warn("analysis failed", "incident", id, "err", err)
		}
	})
	wg.Wait()
}

// enqueueStale queues open incidents, so that new data for their window
// leads to a new version, and resolved ones whose analysis failed or never
// finished (a few minutes after their last attempt).
func (a *Analyzer) enqueueStale(ctx context.Context) {
	if n, err := a.st.DropAbandonedAnalyses(ctx); err == nil && n > 0 {
		a.opt.Log.Info("dropped analyses abandoned by a stopped analyzer on resolved incidents", "versions", n)
	}
	if ids, err := a.st.ResolvedWithoutReadyAnalysis(ctx, retryFailedAfter, 50); err == nil {
		for _, id := range ids {
			a.Enqueue(id)
		}
	}
	cursor := ""
	for {
		page, next, err := a.st.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen, Cursor: cursor, Limit: 200})
		if err != nil {
			return
		}
		for _, in := range page {
			a.Enqueue(in.ID)
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

// retryFailedAfter is how long a resolved incident's failed (or
// abandoned) analysis waits before it is tried again.
const retryFailedAfter = 5 * time.Minute

// Analyze analyses one incident now and returns the stored version. Unless
// force is set it does nothing when the newest ready analysis was computed
// from the same data (same digest), and it never recomputes a resolved
// incident that has one: its permalink must stay as it was.
func (a *Analyzer) Analyze(ctx context.Context, id int64, force bool) (store.AnalysisRecord, error) {
	in, err := a.st.Incident(ctx, id)
	if err != nil {
		return store.AnalysisRecord{}, err
	}
	w := incidentWindow(in, a.opt.Now())
	digest, err := a.st.WindowDigest(ctx, w.From.Add(-sampleLead), w.To)
	if err != nil {
		return store.AnalysisRecord{}, err
	}
	digest = fmt.Sprintf("%s|%s|%s|%s", w.From.Format(time.RFC3339), w.To.Format(time.RFC3339), in.Scope, digest)
	prev, perr := a.st.LatestReadyAnalysis(ctx, id)
	if perr != nil && !errors.Is(perr, store.ErrNotFound) {
		return store.AnalysisRecord{}, perr
	}
	if perr == nil && !force && (prev.InputsDigest == digest || in.Status == store.IncidentResolved) {
		return prev, nil
	}
	version, err := a.st.StartAnalysisOnce(ctx, id, digest, force)
	if errors.Is(err, store.ErrAnalysisBusy) { // another replica is on it, or just was
		return a.st.LatestAnalysis(ctx, id)
	}
	if err != nil {
		return store.AnalysisRecord{}, err
	}
	start := time.Now()
	input, err := LoadInput(ctx, a.st, w, in.Scope, a.opt.SLO)
	if err != nil {
		// Stopped (a shutdown) is no failure of the analysis: the version
		// stays pending and is taken over once stale. A failure counts
		// towards the last attempts of a resolved incident.
		if ctx.Err() == nil {
			_ = a.st.FinishAnalysis(context.WithoutCancel(ctx), id, version, nil, err.Error())
		}
		return store.AnalysisRecord{}, err
	}
	loaded := time.Since(start)
	result := correlate.Analyze(input)
	body, err := json.Marshal(result)
	if err != nil {
		_ = a.st.FinishAnalysis(context.WithoutCancel(ctx), id, version, nil, err.Error())
		return store.AnalysisRecord{}, err
	}
	if err := a.st.FinishAnalysis(ctx, id, version, body, ""); err != nil {
		return store.AnalysisRecord{}, err
	}
	top := ""
	if len(result.Causes) > 0 {
		top = string(result.Causes[0].Category)
	}
	a.opt.Log.Info("analysis ready", "incident", id, "version", version, "top_cause", top,
		"curves", len(input.Curves), "samples", len(input.Samples), "events", len(input.Events),
		"load_ms", loaded.Milliseconds(), "total_ms", time.Since(start).Milliseconds())
	if a.opt.OnReady != nil {
		// The version stored before this one, read now: another replica
		// may have stored one since prev was read.
		prevTop := ""
		if before, err := a.st.ReadyAnalysisBefore(ctx, id, version); err == nil {
			prevTop = topCategory(before.Result)
		}
		a.opt.OnReady(id, version, prevTop, top)
	}
	return a.st.LatestAnalysis(ctx, id)
}

// topCategory reads the first cause's category from a stored result.
func topCategory(result json.RawMessage) string {
	var r correlate.Analysis
	if json.Unmarshal(result, &r) != nil || len(r.Causes) == 0 {
		return ""
	}
	return string(r.Causes[0].Category)
}
