package diagnose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
)

// DetectorOptions configure the background detector; zero fields take
// defaults.
type DetectorOptions struct {
	Interval      time.Duration         // how often to look; default 1m
	Lookback      time.Duration         // how much recent data each pass judges; default 2h
	Merge         time.Duration         // spikes closer than this join one incident; default 30m
	OpenIncidents bool                  // open incidents for severe spikes
	MinSeverity   string                // "page" (default) or "ticket"
	Sensitivity   correlate.Sensitivity // the spike detector's false-alarm budget; default medium
	SLO           SLOFunc
	Log           *slog.Logger
	Now           func() time.Time
	// Incidents opens, extends and resolves the detector's incidents (and
	// so tells the analysis and webhook workers, and freezes resolved
	// ones). nil: a service of the detector's own, whose freezes Run works.
	Incidents *incident.Service
	// Wake, when it delivers, runs a pass now (at most one a second):
	// the pull loop sends on it after a round that stored points, so a
	// spike is judged as its points land, not up to Interval later. nil:
	// the Interval alone.
	Wake <-chan struct{}
}

// Detector records latency spikes as data arrives and opens incidents for
// the severe ones, merging spikes that come close together.
type Detector struct {
	st      *store.Store
	opt     DetectorOptions
	ownsInc bool // opt.Incidents was made here: Run works its freezes
}

// NewDetector returns a Detector over st.
func NewDetector(st *store.Store, opt DetectorOptions) *Detector {
	if opt.Interval <= 0 {
		opt.Interval = time.Minute
	}
	if opt.Lookback <= 0 {
		opt.Lookback = 2 * time.Hour
	}
	if opt.Merge <= 0 {
		opt.Merge = 30 * time.Minute
	}
	if opt.MinSeverity == "" {
		opt.MinSeverity = "page"
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	d := &Detector{st: st, opt: opt}
	if d.opt.Incidents == nil {
		d.opt.Incidents, d.ownsInc = incident.New(st, incident.Options{Log: opt.Log, Now: opt.Now}), true
	}
	return d
}

// minWakeGap bounds how often wakes run passes: pull rounds of many
// sources may land in quick succession.
const minWakeGap = time.Second

// Run calls Once every Interval, and when Wake delivers, until ctx ends.
func (d *Detector) Run(ctx context.Context) {
	if d.ownsInc {
		go d.opt.Incidents.Run(ctx)
	}
	timer := time.NewTimer(d.opt.Interval)
	defer timer.Stop()
	for {
		started := time.Now()
		if err := d.Once(ctx); err != nil && ctx.Err() == nil {
			d.opt.Log.Warn("spike detection failed", "err", err)
		}
		timer.Reset(d.opt.Interval) // Go ≥ 1.23: no stale tick survives Reset
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.opt.Wake:
			if wait := minWakeGap - time.Since(started); wait > 0 && !sleepCtx(ctx, wait) {
				return
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Once judges the last Lookback of latency curves, records every spike and
// opens, joins or closes detector incidents.
func (d *Detector) Once(ctx context.Context) error {
	now := d.opt.Now()
	from := now.Add(-d.opt.Lookback)
	// Spikes still ongoing are judged whatever their onset (up to
	// followFor back): one that began during an outage of the data longer
	// than the lookback is found once the data catches up.
	spikes, err := findSpikes(ctx, d.st, SpikeQuery{From: from, To: now, Sensitivity: d.opt.Sensitivity, HoldElevated: true,
		OngoingSince: now.Add(-followFor)}, d.opt.SLO)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(spikes))
	for _, f := range spikes {
		have[spikeID(f.Spike)] = true
	}
	// A spike still ongoing (a regression that holds, see holdElevated), or
	// of an incident still open, that began before the lookback is judged
	// again from its onset, up to followFor back, so that it stays ongoing,
	// and its incident open, for as long as the latency is up — also across
	// a pause of the data. Only its model's curves are read that far back.
	followed, err := d.st.FollowedModels(ctx, from)
	if err != nil {
		return err
	}
	for _, m := range sortedModels(followed) {
		// From well before the stored onset: a re-detection may place it
		// a step or two earlier, and must not fall outside the read.
		since := maxTime(followed[m].Add(-30*time.Minute), now.Add(-followFor))
		more, err := findSpikes(ctx, d.st, SpikeQuery{From: since, To: now, Scope: correlate.Scope{Model: m}, Sensitivity: d.opt.Sensitivity, HoldElevated: true}, d.opt.SLO)
		if err != nil {
			return err
		}
		for _, f := range more {
			if f.Onset.Before(from) && !have[spikeID(f.Spike)] { // the others the first pass has
				spikes = append(spikes, f)
			}
		}
	}
	regressions, err := d.changeRegressions(ctx, now, spikes)
	if err != nil {
		return err
	}
	spikes = append(spikes, regressions...)
	sort.SliceStable(spikes, func(i, j int) bool { return spikes[i].Onset.Before(spikes[j].Onset) })
	seen := make([]int64, 0, len(spikes))
	for _, f := range spikes {
		sp := f.Spike
		key := correlate.Curve{Role: sp.Role, Level: sp.Level, Scope: sp.Scope}.Key()
		id, _, incident, err := d.st.RecordSpike(ctx, key, sp)
		if err != nil {
			return err
		}
		seen = append(seen, id)
		if !d.opt.OpenIncidents || !d.severeEnough(sp) {
			continue
		}
		// incident is nil too for a spike back up after its incident was
		// resolved as over (see store.RecordSpike): it is news again.
		if incident != nil {
			if err := d.pageAgainIfResolvedTooSoon(ctx, *incident, id, sp, now); err != nil {
				return err
			}
			continue
		}
		open := lasting(f)
		if open && !heldOrTripled(f) {
			// Opened on its excess alone: not while new replicas of its
			// model warm up, whose cold bump is over in a minute or two.
			warm, err := d.warmingUp(ctx, sp)
			if err != nil {
				return err
			}
			open = !warm
		}
		var change *correlate.Event
		if !open {
			if change, err = d.changeBefore(ctx, sp); err != nil {
				return err
			}
			if change == nil {
				continue
			}
		}
		// The incident found open may be resolved before the spike is
		// attached to it (a person resolving it, another replica's
		// detector closing it): the spike is then news again, and is
		// looked for anew, which opens a new incident for it.
		for tries := 1; ; tries++ {
			err := d.openOrJoin(ctx, id, sp, change)
			if errors.Is(err, store.ErrIncidentResolved) && tries < 3 {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	held, err := d.stillHeld(ctx, seen, now)
	if err != nil {
		return err
	}
	seen = append(seen, held...)
	// Spikes raised earlier that this pass no longer sees were blips.
	if err := d.st.SettleSpikes(ctx, from, seen); err != nil {
		return err
	}
	return d.closeQuiet(ctx, now)
}

// openOrJoin opens an incident for spike sp, recorded as id, or joins it
// to the open one it belongs to (see incident.Service.OpenForSpike);
// change is the change that let it open early, if any.
// store.ErrIncidentResolved: the incident found was resolved before the
// spike was attached.
func (d *Detector) openOrJoin(ctx context.Context, id int64, sp correlate.Spike, change *correlate.Event) error {
	inc, created, err := d.opt.Incidents.OpenForSpike(ctx, sp.Scope.Model, sp.Onset, d.opt.Merge, store.NewIncident{
		Title:  fmt.Sprintf("%s spike on %s (%s → %s)", quantileName(sp.Role), sp.Scope.Model, fmtMs(sp.Baseline), peakOf(sp)),
		Source: store.SourceDetector,
		Start:  sp.Onset.Add(-30 * time.Minute),
		Scope:  correlate.Scope{Model: sp.Scope.Model},
	})
	switch {
	case err != nil:
		return err
	case inc.Source != store.SourceDetector || inc.GroupKey != "":
		// An alert's incident, or one an alert group adopted: the
		// alert owns its window, scope and resolution; the spike only
		// joins it (one page and one analysis for one spike).
		d.opt.Log.Info("detector spike joined an alert's incident", "incident", inc.ID, "model", sp.Scope.Model, "onset", sp.Onset)
		return d.opt.Incidents.AttachSpike(ctx, inc.ID, id)
	case created:
		if change != nil {
			d.opt.Log.Info("detector opened incident on a spike that follows a change", "incident", inc.ID,
				"model", sp.Scope.Model, "onset", sp.Onset, "change", change.ID, "kind", change.Kind)
		} else {
			d.opt.Log.Info("detector opened incident", "incident", inc.ID, "model", sp.Scope.Model, "onset", sp.Onset)
		}
	case inc.End != nil:
		if err := d.opt.Incidents.SetEnd(ctx, inc.ID, nil); err != nil { // a new spike reopens the window
			return err
		}
	}
	if inc.Scope.Model != "" && inc.Scope.Model != sp.Scope.Model {
		// Another model slowed down within the same window: one
		// incident (a shared cause is the likelier story, and one page
		// beats two), about every model, so that its analysis weighs
		// both rather than only the first.
		title := fmt.Sprintf("Latency spikes on several models, first %s and %s", inc.Scope.Model, sp.Scope.Model)
		if err := d.opt.Incidents.WidenToFleet(ctx, inc.ID, title); err != nil {
			return err
		}
		d.opt.Log.Info("detector widened an incident to the fleet", "incident", inc.ID, "models", []string{inc.Scope.Model, sp.Scope.Model})
	}
	return d.opt.Incidents.AttachSpike(ctx, inc.ID, id)
}

// repageAfter is how long after a person resolved a detector incident its
// spike may still be up before the detector pages again: a fix that has
// just landed brings the latency down within minutes.
const repageAfter = 10 * time.Minute

// pageAgainIfResolvedTooSoon opens a new incident for sp, recorded as
// spikeID and attached to the incident incID, when that incident is a
// detector's that was resolved at least repageAfter ago while sp is still
// up (ongoing: its curve has not come back under holdRatio × its
// baseline). Resolved while the regression held — the board cleared, a fix
// thought out — the spike stayed attached to it and nobody was paged again
// for the rest of the day. Once per spike (the new incident's idempotency
// key): a team that accepts the new level and resolves again is not paged
// every ten minutes. Incidents of alerts are the alerts' to resolve.
func (d *Detector) pageAgainIfResolvedTooSoon(ctx context.Context, incID, spikeID int64, sp correlate.Spike, now time.Time) error {
	if !sp.Ongoing {
		return nil
	}
	prev, err := d.st.Incident(ctx, incID)
	if err != nil {
		return err
	}
	if prev.Status != store.IncidentResolved || prev.Source != store.SourceDetector || prev.GroupKey != "" ||
		prev.ResolvedAt == nil || now.Sub(*prev.ResolvedAt) < repageAfter {
		return nil
	}
	inc, created, err := d.opt.Incidents.OpenOnce(ctx, store.NewIncident{
		Title: fmt.Sprintf("%s on %s still up (%s → %s) after incident #%d was resolved", quantileName(sp.Role), sp.Scope.Model,
			fmtMs(sp.Baseline), peakOf(sp), prev.ID),
		Source:         store.SourceDetector,
		Start:          sp.Onset.Add(-30 * time.Minute),
		Scope:          correlate.Scope{Model: sp.Scope.Model},
		IdempotencyKey: fmt.Sprintf("detector-repage-%d", spikeID),
	})
	if err != nil || !created {
		return err
	}
	d.opt.Log.Info("detector opened an incident again: a resolved incident's spike is still up", "incident", inc.ID,
		"resolved", prev.ID, "model", sp.Scope.Model, "onset", sp.Onset)
	if err := d.opt.Incidents.AttachSpike(ctx, inc.ID, spikeID); !errors.Is(err, store.ErrIncidentResolved) {
		return err
	}
	return nil // resolved again at once: the person saw it, and is not paged a third time
}

// stillFailing says whether an incident's model (any model, for a fleet
// incident) has, over the last errorLookback, an error rate at least
// twice and 1 point above its mean in the hour before the incident.
func (d *Detector) stillFailing(ctx context.Context, in store.Incident, now time.Time) (bool, error) {
	// Two short reads, not the incident's whole span: this runs every
	// pass while the incident waits to close.
	means := func(from, to time.Time) (map[string]float64, error) {
		curves, err := d.st.Curves(ctx, store.CurveFilter{From: from, To: to, Roles: []correlate.Role{correlate.RoleErrorRate},
			Levels: []correlate.Level{correlate.LevelModel}, Scope: correlate.Scope{Model: in.Scope.Model}})
		out := map[string]float64{}
		for _, c := range curves {
			var sum, n float64
			for _, p := range c.Points {
				if !math.IsNaN(p.V) {
					sum, n = sum+p.V, n+1
				}
			}
			if n > 0 {
				out[c.Scope.Model] = sum / n
			}
		}
		return out, err
	}
	recent, err := means(now.Add(-errorLookback), now)
	if err != nil || len(recent) == 0 {
		return false, err
	}
	before, err := means(in.Start.Add(-time.Hour), in.Start)
	if err != nil {
		return false, err
	}
	for model, r := range recent {
		if base := before[model]; r >= 2*base && r >= base+0.01 {
			return true, nil
		}
	}
	return false, nil
}

// errorLookback is the span of recent error rate stillFailing reads.
const errorLookback = 5 * time.Minute

// spikeID tells one detected spike from another within a pass.
func spikeID(s correlate.Spike) string {
	return correlate.Curve{Role: s.Role, Level: s.Level, Scope: s.Scope}.Key() + "@" + s.Onset.UTC().Format(time.RFC3339Nano)
}

// followFor is how far back the detector follows a spike still ongoing:
// a regression that held a day is a known state of the fleet, not news,
// and re-reading more each pass would grow without bound.
const followFor = 24 * time.Hour

func sortedModels(m map[string]time.Time) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// openExcess is how much latency a spike must have added (see
// foundSpike.excess) to open an incident: what the weakest spike the
// detector raises (×1.5 its baseline) adds in three minutes, an alert's
// "for: 3m". A bigger spike gets there sooner — ×2 in 90 s, ×3 in 45 s,
// ×4 in 30 s, when the alarm has just confirmed it — as a fast error-budget
// burn pages sooner than a slow one; a bad minute at ×2 (60 s) does not.
const openExcess = 90 * time.Second

// lasting says whether a spike deserves an incident yet: it has added
// openExcess of latency, held for three minutes, or tripled the baseline
// (the last two make it an incident whatever comes next: see
// correlate.DetectSpikes' blips). Until then it is recorded but nobody is
// paged, unless a change came just before it (see changeLead). Every quantile counts: a delay added to every request (a batching
// window, say) moves the median the most in proportion.
func lasting(f foundSpike) bool {
	return f.excess >= openExcess || heldOrTripled(f)
}

// heldOrTripled says whether a spike has held three minutes or tripled
// its baseline.
func heldOrTripled(f foundSpike) bool {
	return f.End.Sub(f.Start) >= 3*time.Minute || f.PeakValue >= 3*f.Baseline
}

// warmKinds are the events that bring new replicas of a model, cold: their
// first requests are slower (weights paged in, CUDA graphs captured,
// caches empty) until they have served for a minute or two.
var warmKinds = []correlate.EventKind{correlate.KindScaleUp, correlate.KindReplicaStart, correlate.KindReplicaRestart}

// warmLead is how long before a spike's onset a replica's start may lie
// to be warming up at it: the load of a large model's weights (one to two
// minutes), then its first minute of traffic.
const warmLead = 5 * time.Minute

// warmingUp says whether new replicas of sp's model started within
// warmLead before its onset. Such a spike opens an incident only once it
// has held three minutes or tripled, not on the 90 s of excess that opens
// others: an HPA scale-up of pods without warm-up requests lifts the
// model's P99 ×2–2.5 for under two minutes, daily, and paging for it
// teaches the on-call to ignore pages. A real cold-start problem (too
// many cold replicas at once, weights never resident) holds, and opens
// at three minutes; a rollout's spike follows a deploy, and the change
// rule opens it at once.
func (d *Detector) warmingUp(ctx context.Context, sp correlate.Spike) (bool, error) {
	events, err := d.st.Events(ctx, store.EventFilter{From: sp.Onset.Add(-warmLead), To: sp.Onset.Add(changeLag),
		Scope: correlate.Scope{Model: sp.Scope.Model}, Kinds: warmKinds, Limit: 100})
	if err != nil {
		return false, err
	}
	warm := false
	for _, e := range events {
		warm = warm || e.Scope.Model == sp.Scope.Model // not a fleet-wide event
	}
	if !warm {
		return false, nil
	}
	// Restarts that repeat are a crash loop (CrashLoopBackOff restarts an
	// OOM-killed or failing container every few minutes), not a warm-up:
	// each of its cold bumps is as short as a scale-up's, and excusing
	// them left a replica crashing every five minutes unpaged for good.
	restarts, err := d.st.Events(ctx, store.EventFilter{From: sp.Onset.Add(-crashLoopWithin), To: sp.Onset.Add(changeLag),
		Scope: correlate.Scope{Model: sp.Scope.Model}, Kinds: []correlate.EventKind{correlate.KindReplicaRestart}})
	if err != nil {
		return false, err
	}
	n := 0
	for _, e := range restarts {
		if e.Scope.Model == sp.Scope.Model {
			n++
		}
	}
	return n < 2, nil
}

// crashLoopWithin is how far back restarts of a model's replicas are
// counted: two within it are a crash loop, whose spikes are not excused
// as warm-ups (the back-off of a crash loop tops out at five minutes).
const crashLoopWithin = 30 * time.Minute

// A confirmed spike that follows a change of its model (or a fleet-wide
// one) by at most changeLead opens an incident at once, without waiting
// for lasting: the change is a second, independent sign that something is
// wrong, the likeliest cause and the cheapest to undo, so each minute of
// waiting costs most there (Datadog's faulty-deployment detection and
// Sift's deploy check read the same pairing). A blip with no change before
// it still waits. changeLag admits an event posted a little after the
// onset it caused (a CD tool that reports when its first stage is done,
// clocks a few seconds apart).
const (
	changeLead = 15 * time.Minute
	changeLag  = time.Minute
)

// changeKinds are the changes someone made, and can undo; scaling and
// restarts are the fleet's reactions and are not among them.
var changeKinds = []correlate.EventKind{correlate.KindDeploy, correlate.KindRollback, correlate.KindConfigChange, correlate.KindRouteChange}

// changeBefore returns the latest change that may explain sp, or nil.
func (d *Detector) changeBefore(ctx context.Context, sp correlate.Spike) (*correlate.Event, error) {
	events, err := d.st.Events(ctx, store.EventFilter{From: sp.Onset.Add(-changeLead), To: sp.Onset.Add(changeLag),
		Scope: correlate.Scope{Model: sp.Scope.Model}, Kinds: changeKinds})
	if err != nil || len(events) == 0 {
		return nil, err
	}
	return &events[len(events)-1], nil
}

// regressionWatch is how long after a change of a model its latency is
// compared with the level before the change (correlate.ChangeRegression):
// a progressive delivery of four 15-minute steps, and a regression that
// takes its last step's traffic to show.
const regressionWatch = 2 * time.Hour

// changeRegressions returns the regressions that changes of the last
// regressionWatch brought to their model's latency so gradually that the
// spike detector took them for drift (see correlate.ChangeRegression), on
// the curves where it found no spike since the change. A change with no
// model (fleet-wide) is not compared: every model would be.
//
// Each model with changes is read once, however many changes it had
// (a CD tool may post one per canary step or per replica): its latency
// and traffic since its first change's Before; only a curve that
// regressed also reads the same span a day earlier (a daily rise is not
// the change's) and the model's recorded spikes.
// A model with no traffic curve and no day before is not judged: a rise
// there may be the load, which nothing can tell from the change.
func (d *Detector) changeRegressions(ctx context.Context, now time.Time, found []foundSpike) ([]foundSpike, error) {
	events, err := d.st.Events(ctx, store.EventFilter{From: now.Add(-regressionWatch), To: now, Kinds: changeKinds})
	if err != nil {
		return nil, err
	}
	var models []string
	changes := map[string][]correlate.Event{} // oldest first
	for _, ev := range events {
		if ev.Scope.Model == "" {
			continue
		}
		if _, ok := changes[ev.Scope.Model]; !ok {
			models = append(models, ev.Scope.Model)
		}
		changes[ev.Scope.Model] = append(changes[ev.Scope.Model], ev)
	}
	roles := append(append([]correlate.Role(nil), latencyRoles...), correlate.RoleQPS)
	levels := []correlate.Level{correlate.LevelModel}
	var out []foundSpike
	for _, model := range models {
		evs := changes[model]
		sc := correlate.Scope{Model: model}
		from := evs[0].Time.Add(-regressionBefore)
		read, err := d.st.Curves(ctx, store.CurveFilter{From: from, To: now, Roles: roles, Levels: levels, Scope: sc})
		if err != nil {
			return nil, err
		}
		// Read only for a curve that regressed (most passes find none): the
		// same span a day earlier, and the spikes recorded since the change.
		var previous map[string][]correlate.Point
		var recorded []store.RecordedSpike
		lookCloser := func() error {
			if previous != nil {
				return nil
			}
			prevRead, err := d.st.Curves(ctx, store.CurveFilter{From: from.Add(-24 * time.Hour), To: now.Add(-24 * time.Hour), Roles: latencyRoles, Levels: levels, Scope: sc})
			if err != nil {
				return err
			}
			previous = make(map[string][]correlate.Point, len(prevRead))
			for _, c := range prevRead {
				previous[c.Key()] = c.Points
			}
			// Spikes an incident holds that this pass did not find
			// (stillHeld keeps them ongoing while the curve stands up):
			// that episode is recorded already, and a regression over it
			// would be a second spike of the same curve on the same incident.
			recorded, err = d.st.SpikesOverlapping(ctx, evs[0].Time, now, sc, 100)
			return err
		}
		var curves []correlate.Curve
		var load []correlate.Point
		for _, c := range read {
			switch {
			case c.Scope.Model != model:
			case c.Role == correlate.RoleQPS:
				if load == nil {
					load = c.Points
				}
			default:
				curves = append(curves, c)
			}
		}
		step := stepOf(curves)
		quantiled := false
		for _, c := range curves {
			quantiled = quantiled || c.Role == correlate.RoleLatencyP99 || c.Role == correlate.RoleLatencyP95
		}
		regressed := map[correlate.Role]bool{} // given a regression here: not again for a later change
		for _, ev := range evs {
			covered := map[correlate.Role]bool{} // curves with a spike since the change
			for _, f := range found {
				if f.Scope.Model == model && !f.End.Before(ev.Time) {
					covered[f.Role] = true
				}
			}
			for _, c := range curves {
				if covered[c.Role] || regressed[c.Role] || c.Role == correlate.RoleLatencyMean && quantiled {
					continue
				}
				opt := correlate.RegressionOptions{Step: step, Before: regressionBefore, Watch: regressionWatch, Load: load,
					Sensitivity: d.opt.Sensitivity}
				if d.opt.SLO != nil && c.Role != correlate.RoleLatencyP50 && c.Role != correlate.RoleLatencyMean {
					if v, ok := d.opt.SLO(c.Scope.Model); ok {
						opt.SLO = v
					}
				}
				if _, ok := correlate.ChangeRegression(c.Points, ev.Time, opt); !ok {
					continue // nor with the day before, which only raises the bar
				}
				if err := lookCloser(); err != nil {
					return nil, err
				}
				if opt.Previous = previous[c.Key()]; len(load) == 0 && len(opt.Previous) == 0 {
					continue
				}
				sp, ok := correlate.ChangeRegression(c.Points, ev.Time, opt)
				if !ok {
					continue
				}
				regressed[c.Role] = true
				sp.Role, sp.Level, sp.Scope = c.Role, c.Level, c.Scope
				// Ongoing at a last point long past, as findSpikes says it:
				// its data stopped, and nothing says the latency is still up.
				if n := len(c.Points); sp.Ongoing && n > 0 && now.Sub(c.Points[n-1].Time()) > staleData {
					sp.Ongoing = false
				}
				key := correlate.Curve{Role: sp.Role, Level: sp.Level, Scope: sp.Scope}.Key()
				if heldAlready(recorded, key, sp) {
					continue
				}
				out = append(out, foundSpike{Spike: sp, excess: excess(c.Points, sp, step)})
			}
		}
	}
	return out, nil
}

// heldAlready says whether an incident holds an ongoing spike of the
// series key, other than sp (another start), that overlaps it.
func heldAlready(recorded []store.RecordedSpike, key string, sp correlate.Spike) bool {
	for _, r := range recorded {
		if r.SeriesKey == key && r.IncidentID != nil && r.Ongoing && r.Direction == correlate.Up &&
			!r.Start.Equal(sp.Start) && !r.End.Before(sp.Start) {
			return true
		}
	}
	return false
}

// regressionBefore is the stretch before a change whose level its model's
// latency is compared with.
const regressionBefore = 30 * time.Minute

// Record detects and records the latency spikes with onset in [from, to)
// without opening incidents: for history pulled after the fact. It
// returns how many spikes it recorded.
func (d *Detector) Record(ctx context.Context, from, to time.Time) (int, error) {
	// As the live detector sees them (HoldElevated): a regression that
	// holds is ongoing, not over once the trailing baseline takes it in.
	spikes, err := Spikes(ctx, d.st, SpikeQuery{From: from, To: to, Sensitivity: d.opt.Sensitivity, HoldElevated: true}, d.opt.SLO)
	if err != nil {
		return 0, err
	}
	for _, sp := range spikes {
		key := correlate.Curve{Role: sp.Role, Level: sp.Level, Scope: sp.Scope}.Key()
		if _, _, _, err := d.st.RecordSpike(ctx, key, sp); err != nil {
			return 0, err
		}
	}
	return len(spikes), nil
}

// stillHeld keeps ongoing the spikes of incidents that this pass no
// longer finds while their curve still stands over holdRatio × the
// baseline they rose from (holdElevated), and returns their ids. A rise
// in steps — a regression rolled out to 10, 25, 50, then 100 % of the
// traffic — re-read over a longer stretch climbs slower than MaxCreep
// allows and reads as drift; its spike vanished and its incident resolved
// while the latency still stood ×1.8.
func (d *Detector) stillHeld(ctx context.Context, seen []int64, now time.Time) ([]int64, error) {
	unseen, err := d.st.UnseenIncidentSpikes(ctx, seen)
	if err != nil {
		return nil, err
	}
	var held []int64
	for _, r := range unseen {
		cs, err := d.st.Curves(ctx, store.CurveFilter{From: r.End.Add(-holdSpan), To: now,
			Roles: []correlate.Role{r.Role}, Levels: []correlate.Level{r.Level}, Scope: r.Scope})
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Key() != r.SeriesKey {
				continue
			}
			sp := r.Spike
			sp.Ongoing = false
			if sp = holdElevated(c.Points, sp, stepOf(cs)); !sp.Ongoing {
				break
			}
			if _, _, _, err := d.st.RecordSpike(ctx, r.SeriesKey, sp); err != nil {
				return nil, err
			}
			held = append(held, r.ID)
		}
	}
	return held, nil
}

// closeQuiet closes detector incidents whose spikes have all ended (not
// those an alert group adopted, which its resolution closes): the
// window ends 15 minutes after the last spike, and once Merge has passed
// without a new spike the incident is resolved.
func (d *Detector) closeQuiet(ctx context.Context, now time.Time) error {
	// Every open detector incident, page by page: others (manual ones
	// nobody resolves) must not push one out of a single page.
	var open []store.Incident
	for cursor := ""; ; {
		page, next, err := d.st.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen, Source: store.SourceDetector, Limit: 500, Cursor: cursor})
		if err != nil {
			return err
		}
		open = append(open, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	for _, in := range open {
		if in.GroupKey != "" {
			continue // an alert group adopted it: its resolution closes it
		}
		ongoing, lastEnd, ok, err := d.st.IncidentSpikeSpan(ctx, in.ID)
		if err != nil {
			return err
		}
		if !ok {
			// No spike holds it (its attach failed and its spike was settled
			// as a blip since): it counts from its first onset, which the
			// detector set 30 minutes after its start, lest it stay open,
			// and be analysed again every round, for ever.
			lastEnd = in.Start.Add(30 * time.Minute)
		}
		if ongoing {
			if in.End != nil { // a spike that had ended (its data paused) is back
				if err := d.opt.Incidents.SetEnd(ctx, in.ID, nil); err != nil {
					return err
				}
			}
			continue
		}
		end := lastEnd.Add(15 * time.Minute)
		if in.End == nil || !in.End.Equal(end) {
			if err := d.opt.Incidents.SetEnd(ctx, in.ID, &end); err != nil {
				return err
			}
		}
		if now.Sub(lastEnd) > d.opt.Merge {
			// A spike recorded within the window a new spike joins it by
			// (OpenDetectorIncident: its end + Merge), not yet worth an
			// incident, may still join: resolving now would open a second
			// incident for one episode when it does.
			if pending, err := d.st.PendingSpike(ctx, in.Scope.Model, in.Start, end.Add(d.opt.Merge), d.openingSeverities()); err != nil {
				return err
			} else if pending {
				continue
			}
			// Its data paused (Prometheus or the pull down): nothing says the
			// latency came back, so the incident waits, up to followFor.
			if last, ok, err := d.st.IncidentDataUntil(ctx, in.ID); err != nil {
				return err
			} else if ok && now.Sub(last) > staleData && now.Sub(last) < followFor {
				continue
			}
			// Latency comes down when requests start failing fast: an
			// incident whose errors stand well above where they were
			// before it is not over (for up to followFor).
			if now.Sub(lastEnd) < followFor {
				if failing, err := d.stillFailing(ctx, in, now); err != nil {
					return err
				} else if failing {
					continue
				}
			}
			// Only if its spikes still say so: another replica's
			// detector (the lease changing hands) may have attached an
			// ongoing spike since they were read. Nobody waits on the
			// detector: the snapshot is taken on the incident worker,
			// before retention can drop the data.
			if _, err := d.opt.Incidents.ResolveQuiet(ctx, in.ID, lastEnd); err != nil {
				return err
			}
		}
	}
	return nil
}

// openingSeverities are the severities severeEnough lets open incidents.
func (d *Detector) openingSeverities() []string {
	if d.opt.MinSeverity == "ticket" {
		return []string{"page", "ticket"}
	}
	return []string{"page"}
}

func (d *Detector) severeEnough(sp correlate.Spike) bool {
	switch d.opt.MinSeverity {
	case "ticket":
		return sp.Severity == "page" || sp.Severity == "ticket"
	}
	return sp.Severity == "page"
}

func quantileName(r correlate.Role) string {
	switch r {
	case correlate.RoleLatencyP50:
		return "P50"
	case correlate.RoleLatencyP95:
		return "P95"
	case correlate.RoleLatencyMean:
		return "mean"
	}
	return "P99"
}

// peakOf is a spike's peak, "≥ 10.00s" when its quantile was pinned at its
// histogram's top bucket (the true value is higher).
func peakOf(sp correlate.Spike) string {
	if sp.PeakAtCeiling {
		return "≥ " + fmtMs(sp.PeakValue)
	}
	return fmtMs(sp.PeakValue)
}

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.0fms", v)
}
