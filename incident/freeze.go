package incident

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// Snapshot limits: the slow samples are kept (up to a cap) because they
// are the evidence; the others only as a baseline to compare with.
const (
	snapshotMaxSlow     = 20000
	snapshotMaxBaseline = 2000
	snapshotMaxEvents   = 10000
	// snapshotMaxTenants bounds the window's tenant list; past it the list
	// is not kept, and a share preview leaves its title out.
	snapshotMaxTenants = 50000
)

// freeze stores a frozen copy of what the incident page shows over its
// default window — curves (aggregate levels at ~4× the page's
// resolution, replica curves at the page's), events, the slow samples and
// a capped, evenly spread baseline, and the newest ready analysis with
// its version (one that finishes later has the incident frozen again:
// store.UnfrozenIncidents) — so the permalink stays complete after
// retention drops the data.
func (s *Service) freeze(ctx context.Context, id int64) error {
	in, err := s.st.Incident(ctx, id)
	if err != nil {
		return err
	}
	v := View{Incident: in}
	sn := store.Snapshot{IncidentID: id}
	switch rec, err := s.st.LatestReadyAnalysis(ctx, id); {
	case err == nil:
		sn.Analysis, sn.AnalysisVersion = json.RawMessage(rec.Result), rec.Version
		if len(rec.Result) > 2 {
			var an correlate.Analysis
			if err := json.Unmarshal(rec.Result, &an); err != nil {
				return err
			}
			v.Analysis = &an
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	now := s.opt.Now()
	sn.CreatedAt = now.UTC().Truncate(time.Microsecond)
	from, to := v.Window(now)
	end := to.Add(time.Nanosecond)
	page := ChartStep(from, to)
	agg, err := s.st.Curves(ctx, store.CurveFilter{From: from, To: end, Step: max(page/4, 15*time.Second), MaxRoles: store.PeakRoles,
		Levels: []correlate.Level{correlate.LevelFleet, correlate.LevelModel, correlate.LevelVersion, correlate.LevelNode}})
	if err != nil {
		return err
	}
	reps, err := s.st.Curves(ctx, store.CurveFilter{From: from, To: end, Step: page, MaxRoles: store.PeakRoles,
		Levels: []correlate.Level{correlate.LevelReplica}})
	if err != nil {
		return err
	}
	sn.FrozenCurves = append(agg, reps...)
	if sn.FrozenEvents, err = s.st.Events(ctx, store.EventFilter{From: from, To: end, Limit: snapshotMaxEvents}); err != nil {
		return err
	}
	tenants := map[string]bool{}
	if sn.FrozenSamples, err = s.frozenSamples(ctx, v, from, end, tenants); err != nil {
		return err
	}
	for _, e := range sn.FrozenEvents {
		tenants[e.Tenant] = true
	}
	delete(tenants, "")
	// The window's tenants, whole: the frozen samples are thinned, and a
	// share link's preview scrubs every tenant name from the title.
	if len(tenants) <= snapshotMaxTenants {
		sn.Tenants, sn.TenantsKnown = slices.Sorted(maps.Keys(tenants)), true
	}
	// Retention may have dropped the window's beginning since a copy was
	// frozen (an incident open for weeks, frozen as its data was about to
	// expire, then resolved): that copy's part before the floor stays.
	if floor := s.retentionFloor(); !floor.IsZero() && from.Before(floor) {
		switch old, err := s.st.LoadSnapshot(ctx, id); {
		case err == nil:
			keepExpired(&sn, old, floor)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	return s.st.SaveSnapshot(ctx, sn)
}

// retentionFloor is the earliest time retention still keeps (zero: all).
func (s *Service) retentionFloor() time.Time {
	if s.opt.RetentionFloor == nil {
		return time.Time{}
	}
	return s.opt.RetentionFloor()
}

// keepExpired puts into sn what old holds from before floor — data
// retention has dropped since old was frozen — in place of sn's own.
func keepExpired(sn *store.Snapshot, old *store.Snapshot, floor time.Time) {
	cut := floor.UnixMilli()
	curves := map[string]int{}
	for i, c := range sn.FrozenCurves {
		curves[c.Key()] = i
		c.Points = slices.DeleteFunc(c.Points, func(p correlate.Point) bool { return p.T < cut })
		sn.FrozenCurves[i] = c
	}
	for _, c := range old.FrozenCurves {
		i := slices.IndexFunc(c.Points, func(p correlate.Point) bool { return p.T >= cut })
		if i < 0 {
			i = len(c.Points)
		}
		if i == 0 {
			continue
		}
		expired := slices.Clone(c.Points[:i])
		if j, ok := curves[c.Key()]; ok {
			sn.FrozenCurves[j].Points = append(expired, sn.FrozenCurves[j].Points...)
		} else {
			c.Points = expired
			sn.FrozenCurves = append(sn.FrozenCurves, c)
		}
	}
	sn.FrozenEvents = spliceAt(old.FrozenEvents, sn.FrozenEvents, floor, func(e correlate.Event) time.Time { return e.Time })
	sn.FrozenSamples = spliceAt(old.FrozenSamples, sn.FrozenSamples, floor, func(x correlate.Sample) time.Time { return x.Time })
	if sn.TenantsKnown && old.TenantsKnown {
		sn.Tenants = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(sn.Tenants), old.Tenants...))))
	} else {
		sn.Tenants, sn.TenantsKnown = nil, false
	}
}

// spliceAt is old's items from before floor, then fresh's from floor on.
func spliceAt[T any](old, fresh []T, floor time.Time, at func(T) time.Time) []T {
	var out []T
	for _, x := range old {
		if at(x).Before(floor) {
			out = append(out, x)
		}
	}
	for _, x := range fresh {
		if !at(x).Before(floor) {
			out = append(out, x)
		}
	}
	return out
}

// frozenSamples keeps the window's slow samples (up to a cap) and a
// baseline of the others, each spread evenly over time rather than the
// first N. The incident's own span (from the onset, as the sample table
// shows it) fills the cap first, the margin around it what is left: frozen before any analysis (every sample is
// "slow" then), the half hour before the start filled the cap in time
// order and none of the incident's own samples was kept.
//
// tenants collects every tenant the window's samples name.
func (s *Service) frozenSamples(ctx context.Context, v View, from, end time.Time, tenants map[string]bool) ([]correlate.Sample, error) {
	slowMs, def := v.SlowThresholds()
	// The span is what the page's sample table shows by default: from the
	// analysis' onset when there is one (a spike found before the
	// incident's start: Alertmanager's lookback, a widened window).
	spanFrom, _ := v.During(s.opt.Now())
	spanTo := end
	if v.Incident.End != nil {
		spanTo = *v.Incident.End
	}
	own, margin := evenSample{max: snapshotMaxSlow}, evenSample{max: snapshotMaxSlow}
	others := evenSample{max: snapshotMaxBaseline}
	err := s.st.ScanSamples(ctx, store.SampleFilter{From: from, To: end}, func(x *correlate.Sample) error {
		if len(tenants) <= snapshotMaxTenants {
			tenants[x.Tenant] = true
		}
		thr, ok := slowMs[x.Model]
		if !ok {
			thr = def
		}
		switch {
		case x.TotalMs < thr:
			others.add(*x)
		case !x.Time.Before(spanFrom) && !x.Time.After(spanTo):
			own.add(*x)
		default:
			margin.add(*x)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slow := own.result()
	slow = append(slow, evenly(margin.result(), snapshotMaxSlow-len(slow))...)
	out := append(slow, others.result()...)
	slices.SortStableFunc(out, func(a, b correlate.Sample) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// evenSample keeps an evenly spaced subset of at most max of a stream of
// unknown length, in at most 2×max of memory: every stride-th item, the
// stride doubling (and every other kept item dropped) each time 2×max
// are held. An incident's window may reach back a year: its baseline
// samples were all held before being thinned.
type evenSample struct {
	max, stride, seen int
	kept              []correlate.Sample
}

func (e *evenSample) add(x correlate.Sample) {
	if e.stride == 0 {
		e.stride = 1
	}
	if e.seen%e.stride == 0 {
		e.kept = append(e.kept, x)
		if len(e.kept) >= 2*e.max {
			for i := 0; i < e.max; i++ {
				e.kept[i] = e.kept[2*i]
			}
			clear(e.kept[e.max:])
			e.kept = e.kept[:e.max]
			e.stride *= 2
		}
	}
	e.seen++
}

// result is at most max items, evenly spread over what was kept.
func (e *evenSample) result() []correlate.Sample { return evenly(e.kept, e.max) }

// evenly is at most n of xs, evenly spaced.
func evenly(xs []correlate.Sample, n int) []correlate.Sample {
	k := len(xs)
	if k <= n {
		return xs
	}
	out := make([]correlate.Sample, max(n, 0))
	for i := range out {
		out[i] = xs[i*k/n]
	}
	return out
}
