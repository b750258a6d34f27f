// Package incident owns an incident's life: opening it, extending and
// resolving it, freezing what its page shows so that the permalink
// outlives retention, and telling the watchers (the analysis worker, the
// webhook notifier) after each change. Every path that changes an
// incident — the JSON API, the UI, Alertmanager notifications, the spike
// detector — goes through a Service, so none of them can skip a step.
package incident

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/store"
)

// Options configure a Service; zero fields take defaults.
type Options struct {
	Log *slog.Logger     // nil: discard
	Now func() time.Time // nil: time.Now
	// Watchers are told the id of every incident that was opened,
	// extended or resolved (after the change committed), and of one that
	// a reader found without an analysis. They run on the caller's
	// goroutine and must not block: hand the id to a worker's Queue.
	Watchers []func(id int64)
	// FreezeQueue bounds the resolved incidents waiting for their freeze;
	// default 1024.
	FreezeQueue int
	// RetentionFloor is the earliest time retention keeps data of (zero
	// or nil: keeps all): an open incident whose start comes within
	// expiryMargin of it is frozen before its data is dropped.
	RetentionFloor func() time.Time
}

// Service changes incidents. Run works its freeze queue.
type Service struct {
	st      *store.Store
	opt     Options
	freezes *Queue
}

// New returns a Service over st.
func New(st *store.Store, opt Options) *Service {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.FreezeQueue <= 0 {
		opt.FreezeQueue = 1024
	}
	return &Service{st: st, opt: opt, freezes: NewQueue(opt.FreezeQueue)}
}

// Freeze says when a resolution's snapshot is taken.
type Freeze int

const (
	// FreezeNow freezes before Resolve returns: a person resolving opens
	// the permalink next, and it should already be the frozen copy.
	FreezeNow Freeze = iota
	// FreezeLater queues the freeze for the worker (Run): a machine
	// resolving (a notification, the detector) must not wait for it.
	FreezeLater
)

// Notify tells the watchers to look at incident id again; readers call it
// when they find an incident that was never analysed.
func (s *Service) Notify(id int64) {
	for _, w := range s.opt.Watchers {
		w(id)
	}
}

// Open creates an incident.
func (s *Service) Open(ctx context.Context, n store.NewIncident) (store.Incident, error) {
	in, _, err := s.OpenOnce(ctx, n)
	return in, err
}

// OpenOnce is Open for a request that may be retried: with n's
// idempotency key already used for the same request, it returns that
// incident and created false.
func (s *Service) OpenOnce(ctx context.Context, n store.NewIncident) (store.Incident, bool, error) {
	in, created, err := s.st.CreateIncidentOnce(ctx, n)
	if err != nil {
		return store.Incident{}, false, err
	}
	if created {
		s.Notify(in.ID)
	}
	return in, created, nil
}

// OpenForSpike returns the open detector incident a spike of model at
// onset joins, or opens n for it — one step, so detectors racing open one
// (see store.FindOrOpenDetectorIncident). created says it was opened.
func (s *Service) OpenForSpike(ctx context.Context, model string, onset time.Time, merge time.Duration, n store.NewIncident) (store.Incident, bool, error) {
	in, created, err := s.st.FindOrOpenDetectorIncident(ctx, model, onset, merge, n)
	if err != nil {
		return store.Incident{}, false, err
	}
	if created {
		s.Notify(in.ID)
	}
	return in, created, nil
}

// SetEnd moves the end of an incident's window (nil: open-ended again).
func (s *Service) SetEnd(ctx context.Context, id int64, end *time.Time) error {
	if err := s.st.SetIncidentEnd(ctx, id, end); err != nil {
		return err
	}
	s.Notify(id)
	return nil
}

// WidenToFleet makes an incident about every model (see
// store.WidenIncidentToFleet).
func (s *Service) WidenToFleet(ctx context.Context, id int64, title string) error {
	if err := s.st.WidenIncidentToFleet(ctx, id, title); err != nil {
		return err
	}
	s.Notify(id)
	return nil
}

// AttachSpike makes a recorded spike part of an incident.
func (s *Service) AttachSpike(ctx context.Context, id, spikeID int64) error {
	if err := s.st.AttachSpike(ctx, spikeID, id); err != nil {
		return err
	}
	s.Notify(id)
	return nil
}

// Resolve resolves an incident now; resolving twice is harmless. When
// this call resolved it, the watchers are told and the incident is frozen
// (now or on the worker, as freeze says). A failed freeze is logged, not
// returned: the resolution has succeeded, and freezing again is always
// possible.
func (s *Service) Resolve(ctx context.Context, id int64, freeze Freeze) (store.Incident, error) {
	// Told by the update itself: of two resolving at once (a user and the
	// detector), only one notifies and freezes.
	in, resolved, err := s.st.ResolveIncidentOnce(ctx, id, s.opt.Now())
	if err != nil {
		return store.Incident{}, err
	}
	if resolved {
		s.Notify(id)
		s.resolved(ctx, id, freeze)
	}
	return in, nil
}

// ResolveQuiet is Resolve for the detector's close pass, which found the
// incident's spikes all over, the last ending at quietSince: it resolves
// only if none is ongoing or ends later by now (see
// store.ResolveQuietIncident), and freezes on the worker. resolved says
// whether this call resolved it.
func (s *Service) ResolveQuiet(ctx context.Context, id int64, quietSince time.Time) (resolved bool, err error) {
	_, resolved, err = s.st.ResolveQuietIncident(ctx, id, s.opt.Now(), quietSince)
	if err != nil {
		return false, err
	}
	if resolved {
		s.Notify(id)
		s.resolved(ctx, id, FreezeLater)
	}
	return resolved, nil
}

// ApplyAlerts records an Alertmanager notification (store.ApplyAlertGroup:
// it opens, extends or resolves the group's incident, and resolves an
// open one it shows over). The notification is answered without waiting
// for the freeze of a resolved incident.
func (s *Service) ApplyAlerts(ctx context.Context, g store.AlertGroup, lookback time.Duration) (store.AlertOutcome, error) {
	out, err := s.st.ApplyAlertGroup(ctx, g, lookback, s.opt.Now())
	if err != nil {
		return out, err
	}
	if out.Changed() {
		s.Notify(out.IncidentID)
	}
	if out.Resolved {
		s.resolved(ctx, out.IncidentID, FreezeLater)
	}
	if out.Superseded != 0 {
		s.Notify(out.Superseded)
		s.resolved(ctx, out.Superseded, FreezeLater)
	}
	return out, nil
}

// Freeze stores a frozen copy of what the incident's page shows now (the
// freeze button), replacing an earlier one.
func (s *Service) Freeze(ctx context.Context, id int64) error {
	start := time.Now()
	if err := s.freeze(ctx, id); err != nil {
		return err
	}
	s.opt.Log.InfoContext(ctx, "incident frozen", "incident", id, "ms", time.Since(start).Milliseconds())
	return nil
}

// resolved freezes a just-resolved incident, now or later.
func (s *Service) resolved(ctx context.Context, id int64, when Freeze) {
	if when == FreezeLater {
		if !s.freezes.Add(id) {
			s.opt.Log.WarnContext(ctx, "freeze queue full; resolved incident not frozen (use its freeze button)", "incident", id)
		}
		return
	}
	if err := s.Freeze(ctx, id); err != nil {
		s.opt.Log.WarnContext(ctx, "snapshot on resolve failed", "incident", id, "err", err)
	}
}

// Run freezes queued incidents until ctx ends. The queue lives in memory,
// so Run also looks, at start and then every sweepEvery, for incidents
// resolved in the last sweepBack that have no snapshot — a freeze lost to
// a restart or a full queue, or one that failed — and freezes them.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(sweepEvery)
		defer tick.Stop()
		for {
			s.sweep(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	s.freezes.Work(ctx, func(ctx context.Context, id int64) {
		if err := s.Freeze(ctx, id); err != nil && ctx.Err() == nil {
			s.opt.Log.Warn("snapshot on resolve failed", "incident", id, "err", err)
		}
	})
	wg.Wait()
}

// How the worker finds resolved incidents that were never frozen: recent
// ones only, whose data retention has not dropped yet.
const (
	sweepEvery = 10 * time.Minute
	sweepBack  = 24 * time.Hour
	// settleAfter: a shared manual incident's window that ended this long
	// ago is done; its page is frozen (UnfrozenIncidents).
	settleAfter = 30 * time.Minute
	// expiryMargin: an open incident whose start is this close to the
	// retention floor is frozen (the floor moves a day a day; the sweep
	// runs every ten minutes).
	expiryMargin = 2 * 24 * time.Hour
)

func (s *Service) sweep(ctx context.Context) {
	now := s.opt.Now()
	var expiring time.Time
	if s.opt.RetentionFloor != nil {
		if floor := s.opt.RetentionFloor(); !floor.IsZero() {
			expiring = floor.Add(expiryMargin)
		}
	}
	ids, err := s.st.UnfrozenIncidents(ctx, now.Add(-sweepBack), now.Add(-settleAfter), expiring, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.opt.Log.Warn("looking for unfrozen incidents failed", "err", err)
		}
		return
	}
	for _, id := range ids {
		s.freezes.Add(id)
	}
}
