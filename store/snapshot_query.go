package store

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// The methods below give a Snapshot the read API of the live Store, with
// the same filter semantics as the SQL they mirror, so a page renders from
// either without knowing which. They never fail; the error is there to
// match the Store's signatures.

// Curves is Store.Curves over the frozen curves. Downsampling re-buckets
// the (already downsampled) points on the same epoch-aligned grid.
func (sn *Snapshot) Curves(_ context.Context, f CurveFilter) ([]correlate.Curve, error) {
	var out []correlate.Curve
	from, to := f.From.UnixMilli(), f.To.UnixMilli()
	for _, c := range sn.FrozenCurves {
		if !f.matches(c) {
			continue
		}
		var pts []correlate.Point
		for _, p := range c.Points {
			if p.T >= from && p.T < to {
				pts = append(pts, p)
			}
		}
		if len(pts) == 0 {
			continue
		}
		if f.Step > 0 {
			pts = rebucket(pts, f.Step.Milliseconds(), slices.Contains(f.MaxRoles, c.Role))
		}
		c.Points = pts
		out = append(out, c)
	}
	sortCurves(out)
	return out, nil
}

// CurveSeries is Store.CurveSeries over the frozen curves.
func (sn *Snapshot) CurveSeries(ctx context.Context, f CurveFilter) ([]correlate.Curve, error) {
	var out []correlate.Curve
	if !f.From.IsZero() && !f.To.IsZero() {
		f.Step = 0
		cs, _ := sn.Curves(ctx, f)
		for _, c := range cs {
			c.Points = nil
			out = append(out, c)
		}
		return out, nil
	}
	for _, c := range sn.FrozenCurves {
		if f.matches(c) {
			c.Points = nil
			out = append(out, c)
		}
	}
	sortCurves(out)
	return out, nil
}

// Events is Store.Events over the frozen events.
func (sn *Snapshot) Events(_ context.Context, f EventFilter) ([]correlate.Event, error) {
	var out []correlate.Event
	match := func(want, got string) bool { return want == "" || got == want || got == "" }
	for _, e := range sn.FrozenEvents {
		if e.Time.Before(f.From) || !e.Time.Before(f.To) {
			continue
		}
		sc := f.Scope
		if !match(sc.Model, e.Model) || !match(sc.Version, e.Version) || !match(sc.Tenant, e.Tenant) ||
			!match(sc.Replica, e.Replica) || !match(sc.Node, e.Node) {
			continue
		}
		if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, e.Kind) {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].ID < out[j].ID
	})
	return limitEvents(out, f.Limit), nil // the changes first, as Store.Events
}

// SamplesPage is Store.SamplesPage over the frozen samples.
func (sn *Snapshot) SamplesPage(_ context.Context, q SampleQuery) (SamplePage, error) {
	return q.PageOf(sn.FrozenSamples), nil
}

// SampleByID is Store.SampleByID over the frozen samples.
func (sn *Snapshot) SampleByID(_ context.Context, from, to time.Time, rid string) (correlate.Sample, error) {
	for _, x := range sn.FrozenSamples {
		if x.RequestID == rid && !x.Time.Before(from) && x.Time.Before(to) {
			return x, nil
		}
	}
	return correlate.Sample{}, ErrNotFound
}

// matches is the series part of CurveFilter in memory (seriesWhere).
func (f CurveFilter) matches(c correlate.Curve) bool {
	if len(f.Roles) > 0 && !slices.Contains(f.Roles, c.Role) {
		return false
	}
	if len(f.Levels) > 0 && !slices.Contains(f.Levels, c.Level) {
		return false
	}
	sc := f.Scope
	if (sc.Model != "" && c.Scope.Model != sc.Model) || (sc.Version != "" && c.Scope.Version != sc.Version) ||
		(sc.Tenant != "" && c.Scope.Tenant != sc.Tenant) || (sc.Replica != "" && c.Scope.Replica != sc.Replica) ||
		(sc.Node != "" && c.Scope.Node != sc.Node) || (f.Stage != "" && c.Stage != f.Stage) {
		return false
	}
	if len(f.Nodes) > 0 && !slices.Contains(f.Nodes, c.Scope.Node) {
		return false
	}
	return true
}

// rebucket downsamples sorted points onto step-wide buckets aligned to the
// epoch, like date_bin in Curves: the mean of each bucket, or its maximum.
func rebucket(pts []correlate.Point, step int64, useMax bool) []correlate.Point {
	var out []correlate.Point
	for i := 0; i < len(pts); {
		b := pts[i].T - ((pts[i].T%step)+step)%step
		sum, mx, n := 0.0, math.Inf(-1), 0
		for ; i < len(pts) && pts[i].T < b+step; i++ {
			sum += pts[i].V
			mx = max(mx, pts[i].V)
			n++
		}
		v := sum / float64(n)
		if useMax {
			v = mx
		}
		out = append(out, correlate.Point{T: b, V: v})
	}
	return out
}

func sortCurves(cs []correlate.Curve) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		for _, p := range [][2]string{{string(a.Role), string(b.Role)}, {string(a.Level), string(b.Level)},
			{a.Scope.Model, b.Scope.Model}, {a.Scope.Version, b.Scope.Version}, {a.Scope.Replica, b.Scope.Replica},
			{a.Scope.Node, b.Scope.Node}, {a.Stage, b.Stage}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
}

// ErrTenantsUnknown: a snapshot taken before the list of its window's
// tenants was kept cannot say them all (its samples are thinned).
var ErrTenantsUnknown = errors.New("snapshot: the window's tenants were not recorded")

// SampleTenants is Store.SampleTenants for the frozen window: every tenant
// its samples and events named (a superset of any part of it), or, for a
// snapshot without that list, the frozen samples' and ErrTenantsUnknown.
func (sn *Snapshot) SampleTenants(_ context.Context, from, to time.Time) ([]string, error) {
	if sn.TenantsKnown {
		return slices.Clone(sn.Tenants), nil
	}
	seen := map[string]bool{}
	var out []string
	for _, x := range sn.FrozenSamples {
		if x.Tenant != "" && !seen[x.Tenant] && !x.Time.Before(from) && x.Time.Before(to) {
			seen[x.Tenant] = true
			out = append(out, x.Tenant)
		}
	}
	sort.Strings(out)
	return out, ErrTenantsUnknown
}
