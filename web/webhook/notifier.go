package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
)

// NotifierOptions configure a Notifier.
type NotifierOptions struct {
	PublicURL string       // base URL of permalinks, without a trailing slash
	Log       *slog.Logger // nil: discard
	Now       func() time.Time
	// OnQueued, if set, is called after deliveries were queued (wake the
	// dispatcher so they go out now rather than at its next poll).
	OnQueued func()
	// SweepEvery is how often Run re-notifies everything that changed in
	// the last SweepWindow (defaults 1m and 24h): a change noted only in
	// memory — lost to a restart, a full queue or a database error — is
	// queued at the next sweep instead of never. Queuing is idempotent, so
	// the sweep sends nothing twice.
	SweepEvery, SweepWindow time.Duration
}

// sweepLimit bounds what one sweep re-notifies of each kind.
const sweepLimit = 500

// Notifier turns incident changes and new analyses into queued webhook
// deliveries (webhook_deliveries rows), one per subscribed webhook,
// rendered in the webhook's format when the event happens; the
// Dispatcher sends them. Queuing is idempotent (one idempotency key per
// incident, event and analysis version), so telling it twice, or from two
// replicas, queues nothing twice.
//
// Events: incident.opened (an incident exists), incident.resolved (it was
// resolved), analysis.ready (its first ready analysis) and cause.changed
// (a later analysis whose top cause differs from the previous one's). A
// webhook gets only events that happened after it was registered.
type Notifier struct {
	st    *store.Store
	opt   NotifierOptions
	queue *incident.Queue
}

// NewNotifier returns a Notifier over st. Call Run to work its queue.
func NewNotifier(st *store.Store, opt NotifierOptions) *Notifier {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SweepEvery <= 0 {
		opt.SweepEvery = time.Minute
	}
	if opt.SweepWindow <= 0 {
		opt.SweepWindow = 24 * time.Hour
	}
	return &Notifier{st: st, opt: opt, queue: incident.NewQueue(1024)}
}

// IncidentChanged notes that an incident was created, changed or
// resolved. It never blocks (it is called on request goroutines); the
// work happens in Run.
func (n *Notifier) IncidentChanged(id int64) {
	if !n.queue.Add(id) { // a burst far beyond anything real: drop rather than block a request
		n.opt.Log.Warn("webhook notifier queue full; incident change not notified", "incident", id)
	}
}

// Run queues deliveries for noted incident changes, and sweeps (at once,
// then every SweepEvery), until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	go func() {
		for {
			if err := n.Sweep(ctx); err != nil && ctx.Err() == nil {
				n.opt.Log.Warn("webhook notify sweep failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(n.opt.SweepEvery):
			}
		}
	}()
	n.queue.Work(ctx, func(ctx context.Context, id int64) {
		if err := n.NotifyIncident(ctx, id); err != nil && ctx.Err() == nil {
			n.opt.Log.Warn("webhook notify failed; the next sweep retries", "incident", id, "err", err)
		}
	})
}

// Sweep queues what the incidents and analyses that changed in the last
// SweepWindow call for and is not queued yet: the safety net under
// IncidentChanged and AnalysisReady, which only note changes in memory.
// Each incident's events are queued in the order they happened, as they
// would have been live: an analysis that was ready before the incident
// resolved goes out before incident.resolved, one ready after it, after.
func (n *Notifier) Sweep(ctx context.Context) error {
	hooks, err := n.st.Webhooks(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	ids, err := n.st.IncidentsChangedWithin(ctx, n.opt.SweepWindow, sweepLimit)
	if err != nil {
		return err
	}
	ready, err := n.st.ReadyAnalysesWithin(ctx, n.opt.SweepWindow, sweepLimit)
	if err != nil {
		return err
	}
	changed := make(map[int64]bool, len(ids))
	for _, id := range ids {
		changed[id] = true
	}
	versions := map[int64][]store.ReadyVersion{}
	for _, r := range ready {
		if _, ok := versions[r.IncidentID]; !ok && !changed[r.IncidentID] {
			ids = append(ids, r.IncidentID)
		}
		versions[r.IncidentID] = append(versions[r.IncidentID], r)
	}
	for _, id := range ids {
		if err := n.sweepIncident(ctx, id, changed[id], versions[id]); err != nil {
			return err
		}
	}
	return nil
}

// sweepIncident queues one incident's events in the order they happened:
// its ready versions by the time they became ready, with opened and
// resolved (when changed, i.e. the incident itself changed within the
// window) at their places among them.
func (n *Notifier) sweepIncident(ctx context.Context, id int64, changed bool, versions []store.ReadyVersion) error {
	resolvedAt := time.Time{} // zero: not resolved, or not this sweep's to tell
	if changed && len(versions) > 0 {
		in, err := n.st.Incident(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if in.Status == store.IncidentResolved {
			resolvedAt = in.UpdatedAt // NotifyIncident's time of incident.resolved
		}
	}
	slices.SortFunc(versions, func(a, b store.ReadyVersion) int {
		return cmp.Or(a.FinishedAt.Compare(b.FinishedAt), cmp.Compare(a.Version, b.Version))
	})
	for _, r := range versions {
		if changed && !resolvedAt.IsZero() && r.FinishedAt.After(resolvedAt) {
			// Ready after the resolution: opened and resolved go first.
			if err := n.NotifyIncident(ctx, id); err != nil {
				return err
			}
			changed = false
		}
		if err := n.NotifyAnalysis(ctx, r.IncidentID, r.Version, r.PrevTop, r.Top); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if changed {
		return n.NotifyIncident(ctx, id)
	}
	return nil
}

// NotifyIncident queues incident.opened (and incident.resolved once it
// is resolved) for every webhook that wants them.
func (n *Notifier) NotifyIncident(ctx context.Context, id int64) error {
	hooks, err := n.st.Webhooks(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	in, err := n.st.Incident(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	// Event times are read on the database's clock, like the webhooks'
	// created_at they are compared with: resolved_at comes from the
	// resolver's clock, updated_at (set at resolution) from Postgres.
	msgs := []message{{Event: store.EventIncidentOpened, At: in.CreatedAt}}
	if in.Status == store.IncidentResolved {
		msgs = append(msgs, message{Event: store.EventIncidentResolved, At: in.UpdatedAt})
	}
	return n.enqueue(ctx, hooks, in.ID, msgs)
}

// AnalysisReady is the analyzer's OnReady: it queues analysis.ready for an
// incident's first ready analysis and cause.changed when a later version's
// top cause differs from the previous one's. It runs on the analyzer's
// goroutine, with a short time limit of its own.
func (n *Notifier) AnalysisReady(id int64, version int, prevTop, newTop string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.NotifyAnalysis(ctx, id, version, prevTop, newTop); err != nil {
		n.opt.Log.Warn("webhook notify failed", "incident", id, "analysis_version", version, "err", err)
	}
}

// NotifyAnalysis is AnalysisReady with a context and an error.
func (n *Notifier) NotifyAnalysis(ctx context.Context, id int64, version int, prevTop, newTop string) error {
	hooks, err := n.st.Webhooks(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	first, err := n.st.FirstReadyAnalysis(ctx, id)
	if err != nil {
		return err
	}
	m := message{Version: version}
	rec, err := n.st.AnalysisVersion(ctx, id, version)
	if err != nil {
		return err
	}
	if version == first {
		m.Event = store.EventAnalysisReady
	} else {
		// A sweep walks old versions too: one whose cause the analysis
		// has left since must not be the last thing receivers hear.
		if now, err := n.st.NewestReadyTopCause(ctx, id); err != nil || now != newTop {
			return err
		}
		// Compared with the cause receivers were last told of — the first
		// ready version's when nothing was sent (a webhook that takes only
		// cause.changed) — and news only with a clear lead: causes scoring
		// alike swap places as data comes in.
		told := prevTop
		v, err := n.st.LastNotifiedVersion(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			v, err = first, nil
		}
		if err != nil {
			return err
		}
		if t, err := n.st.AnalysisTopCause(ctx, id, v); err == nil {
			told = t
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if newTop == told || !clearLead(rec.Result, newTop, told) {
			return nil
		}
		m.Event, m.PrevTop = store.EventCauseChanged, told
	}
	m.At = rec.CreatedAt
	if rec.FinishedAt != nil {
		m.At = *rec.FinishedAt
	}
	in, err := n.st.Incident(ctx, id)
	if err != nil {
		return err
	}
	// The analyzer may finish before the notifier's queue reaches the
	// incident's creation. Deliveries leave in queue order per incident,
	// so opened goes in first (a no-op when it is queued already): a
	// receiver that files a ticket on opened never gets a comment first.
	opened := message{Event: store.EventIncidentOpened, At: in.CreatedAt}
	return n.enqueue(ctx, hooks, in.ID, []message{opened, m})
}

// causeChangeLead is how far a new top cause must score over the one
// receivers were told of, in the same analysis, to be news.
const causeChangeLead = 0.05

// unexplainedScore stands for "unexplained" in a lead: the score under
// which the analysis trusts no cause (correlate's threshold).
const unexplainedScore = 0.35

type rankedCauses struct {
	Causes []struct {
		Category string  `json:"category"`
		Score    float64 `json:"score"`
	} `json:"causes"`
}

// clearLead says whether, in result, newTop scores at least
// causeChangeLead over old ("unexplained" counting as its threshold; a
// cause not ranked at all, as 0).
func clearLead(result []byte, newTop, old string) bool {
	var r rankedCauses
	if json.Unmarshal(result, &r) != nil {
		return true
	}
	score := func(cat string) float64 {
		if cat == "unexplained" || cat == "" {
			return unexplainedScore
		}
		for _, c := range r.Causes {
			if c.Category == cat {
				return c.Score
			}
		}
		return 0
	}
	return score(newTop)-score(old) >= causeChangeLead
}

// enqueue queues each message for each webhook that subscribed to its
// event before it happened, rendered in the webhook's format from the
// incident as it is when that delivery is queued (under the lock that
// orders the webhook's deliveries of the incident): a body never says
// less than an event queued before it. An analysis.ready held up while
// the incident resolved and its incident.resolved went out says
// resolved too, rather than re-raising a ServiceNow alert or un-striking
// a Jira link.
func (n *Notifier) enqueue(ctx context.Context, hooks []store.Webhook, id int64, msgs []message) error {
	queued := 0
	for _, m := range msgs {
		for _, h := range hooks {
			if !slices.Contains(h.Events, m.Event) || h.CreatedAt.After(m.At) {
				continue
			}
			m.Share = ""
			if h.IncludeShareLink {
				// The same link in every delivery of this webhook about
				// this incident; none once its sharing was revoked.
				tok, ok, err := n.st.WebhookShareToken(ctx, id, h)
				if err != nil {
					return err
				}
				if ok {
					m.Share = incident.ShareURL(n.opt.PublicURL, tok)
				}
			}
			ok, err := n.st.EnqueueDelivery(ctx, store.NewDelivery{
				WebhookID: h.ID, IncidentID: id, Event: m.Event, AnalysisVersion: m.Version,
				IdempotencyKey: idempotencyKey(n.opt.PublicURL, id, m.Event, m.Version),
				DueAt:          n.opt.Now(),
				Render: func(in store.Incident) ([]byte, error) {
					m.View = incident.Summary(in, n.opt.PublicURL)
					return render(h.Format, m, n.opt.PublicURL)
				},
			})
			if err != nil {
				return err
			}
			if ok {
				queued++
			}
		}
	}
	if queued > 0 && n.opt.OnQueued != nil {
		n.opt.OnQueued()
	}
	return nil
}

// idempotencyKey is stable per incident, event and analysis version, and
// names this Waterline, so a receiver fed by two installations cannot mix
// them up: "waterline.example.com/incidents/12/analysis.ready/3".
func idempotencyKey(publicURL string, id int64, event string, version int) string {
	k := fmt.Sprintf("%s/incidents/%d/%s", publicHost(publicURL), id, event)
	if version > 0 {
		k += fmt.Sprintf("/%d", version)
	}
	return k
}
