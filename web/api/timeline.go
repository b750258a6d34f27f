package api

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// Timeline limits. Like Prometheus, a curve may have at most 11,000
// points; by default a window is cut into ~300 buckets, enough for a
// chart and small for a 24 h window.
const (
	timelineMaxPoints     = 11000
	timelineDefaultPoints = 300
	timelineMinStep       = 15 * time.Second
)

// timelineRoles is the role vocabulary (correlate.Role*) the timeline
// accepts in ?roles=.
var timelineRoles = correlate.Roles

var timelineLevels = correlate.Levels

// maxTimelineAnswerPoints bounds one timeline answer (series × steps):
// about 25 MB of JSON. Without explicit levels the answer leaves replica
// curves out, and stays far under it.
const maxTimelineAnswerPoints = 1_000_000

// GetTimeline is GET /api/v1/timeline?from=&to=&model=&version=
// &tenant=&replica=&node=&step=&roles=&levels=.
//
// Which curves: those whose scope matches every filter given. Without
// replica or node filter (and without levels=), replica curves are left
// out — a fleet has hundreds — and the fleet, model, version and node
// levels shown. A filter on part of the fleet brings context along: the
// node curves of the nodes its replicas ran on and, for one replica, its
// model's curves.
func (a *API) GetTimeline(c echo.Context) error {
	ctx := c.Request().Context()
	// The spikes below read full-resolution curves: the window is bounded
	// as /spikes' is.
	from, to, err := request.Range(c.QueryParams(), time.Time{}, time.Time{}, maxSpikeWindow)
	if err != nil {
		return err
	}
	step, err := timelineStep(c, from, to)
	if err != nil {
		return err
	}
	roles, err := timelineRoleList(c.QueryParam("roles"))
	if err != nil {
		return err
	}
	levels, explicitLevels, err := timelineLevelList(c.QueryParam("levels"))
	if err != nil {
		return err
	}
	scope := correlate.Scope{
		Model: c.QueryParam("model"), Version: c.QueryParam("version"), Tenant: c.QueryParam("tenant"),
		Replica: c.QueryParam("replica"), Node: c.QueryParam("node"),
	}
	// Bounded before anything is read: series (counted, not loaded) ×
	// steps, at the levels given or the default ones (a small step over
	// a month of every node's curves was unbounded too).
	{
		lv := levels
		if !explicitLevels && scope.Replica == "" && scope.Node == "" {
			lv = defaultLevels
		}
		series, err := a.store.CurveSeries(ctx, store.CurveFilter{From: from, To: to.Add(time.Nanosecond), Roles: roles, Levels: lv, Scope: scope})
		if err != nil {
			return err
		}
		if steps := int(to.Sub(from)/step) + 1; len(series)*steps > maxTimelineAnswerPoints {
			field := "step" // the default levels: the step is what to change
			if explicitLevels {
				field = "levels"
			}
			return request.BadInput(field, "%d series × %d steps is over %d points: filter them (model=, node=, roles=) or raise step",
				len(series), steps, maxTimelineAnswerPoints)
		}
	}
	v, err := Timeline(ctx, a.store, TimelineQuery{From: from, To: to, Step: step, Roles: roles,
		Levels: levels, ExplicitLevels: explicitLevels, Scope: scope})
	if err != nil {
		return err
	}
	// Latency spikes of the models in view, judged on the full-resolution
	// curves (the downsampled ones would blur onsets): bounded as /spikes.
	if err := a.boundSpikeRead(ctx, from, to, nil, correlate.Scope{Model: scope.Model}, "model"); err != nil {
		return err
	}
	spikes, err := diagnose.Spikes(ctx, a.store, diagnose.SpikeQuery{From: from, To: to, Scope: correlate.Scope{Model: scope.Model}}, a.slo)
	if err != nil {
		return err
	}
	if spikes != nil {
		v.Spikes = spikes
	}
	return c.JSON(http.StatusOK, v)
}

// defaultLevels are a timeline's levels without levels= and without a
// replica or node filter: a fleet has hundreds of replica curves.
var defaultLevels = []correlate.Level{correlate.LevelFleet, correlate.LevelModel, correlate.LevelVersion, correlate.LevelNode}

// Source is what a timeline reads: the live store, or an incident's
// frozen snapshot (store.Snapshot answers the same queries).
type Source interface {
	Curves(ctx context.Context, f store.CurveFilter) ([]correlate.Curve, error)
	CurveSeries(ctx context.Context, f store.CurveFilter) ([]correlate.Curve, error)
	Events(ctx context.Context, f store.EventFilter) ([]correlate.Event, error)
}

// TimelineQuery is a parsed timeline request.
type TimelineQuery struct {
	From, To       time.Time
	Step           time.Duration
	Roles          []correlate.Role
	Levels         []correlate.Level
	ExplicitLevels bool
	Scope          correlate.Scope
	// CurvesAnyTenant reads curves without the scope's tenant (most
	// series carry none) but keeps it for events, and drops the series
	// of other tenants where some are pulled: the pages' tenant filter,
	// which must narrow the events (a share link scoped to one tenant
	// shows no other's).
	CurvesAnyTenant bool
}

// Timeline selects the curves and events of q from src; the JSON API and
// the pages' lanes share it so both show the same data. Spikes are left
// empty for the caller.
func Timeline(ctx context.Context, src Source, q TimelineQuery) (wire.Timeline, error) {
	from, to, step, roles, levels, explicitLevels, scope := q.From, q.To, q.Step, q.Roles, q.Levels, q.ExplicitLevels, q.Scope
	if !explicitLevels && scope.Replica == "" && scope.Node == "" {
		levels = defaultLevels
	}
	base := store.CurveFilter{From: from, To: to.Add(time.Nanosecond), Roles: roles, Step: step, MaxRoles: store.PeakRoles}

	cscope := scope // the curves'
	if q.CurvesAnyTenant {
		cscope.Tenant = ""
	}
	f := base
	f.Levels, f.Scope = levels, cscope
	curves, err := src.Curves(ctx, f)
	if err != nil {
		return wire.Timeline{}, err
	}
	evScope := scope
	// (On the curves' scope: a tenant the curves are read without brings
	// no context, and an empty scope would scan every replica.)
	if !explicitLevels && cscope.Node == "" && (cscope.Model != "" || cscope.Version != "" || cscope.Replica != "" || cscope.Tenant != "") {
		// Context: where the selected replicas ran, and for one replica
		// its model as a whole.
		reps, err := src.CurveSeries(ctx, store.CurveFilter{From: from, To: to.Add(time.Nanosecond),
			Levels: []correlate.Level{correlate.LevelReplica}, Scope: cscope})
		if err != nil {
			return wire.Timeline{}, err
		}
		nodes, models := map[string]bool{}, map[string]bool{}
		for _, r := range reps {
			if r.Scope.Node != "" {
				nodes[r.Scope.Node] = true
			}
			if r.Scope.Model != "" {
				models[r.Scope.Model] = true
			}
		}
		if len(nodes) > 0 {
			nf := base
			nf.Levels, nf.Nodes = []correlate.Level{correlate.LevelNode}, sortedSet(nodes)
			more, err := src.Curves(ctx, nf)
			if err != nil {
				return wire.Timeline{}, err
			}
			curves = append(curves, more...)
		}
		if scope.Replica != "" && scope.Model == "" && len(models) == 1 {
			evScope.Model = sortedSet(models)[0]
			mf := base
			mf.Levels, mf.Scope = []correlate.Level{correlate.LevelModel}, correlate.Scope{Model: evScope.Model}
			more, err := src.Curves(ctx, mf)
			if err != nil {
				return wire.Timeline{}, err
			}
			curves = append(curves, more...)
		}
		if scope.Replica != "" && len(nodes) == 1 {
			evScope.Node = sortedSet(nodes)[0]
		}
	}
	if q.CurvesAnyTenant && scope.Tenant != "" {
		curves = OfTenant(curves, scope.Tenant)
	}
	sort.SliceStable(curves, func(i, j int) bool { return curves[i].Key() < curves[j].Key() })
	events, err := src.Events(ctx, store.EventFilter{From: from, To: to.Add(time.Nanosecond), Scope: evScope, Limit: maxTimelineEvents + 1})
	if err != nil {
		return wire.Timeline{}, err
	}
	cut := len(events) > maxTimelineEvents
	if cut { // by the store's ranking, not the last by time: the changes stay
		events = store.LimitEvents(events, maxTimelineEvents)
	}
	if curves == nil {
		curves = []correlate.Curve{}
	}
	if events == nil {
		events = []correlate.Event{}
	}
	return wire.Timeline{From: from, To: to, StepSeconds: step.Seconds(), Scope: scope,
		Curves: curves, Events: events, EventsTruncated: cut, Spikes: []correlate.Spike{}}, nil
}

// maxTimelineEvents bounds a timeline's events (the store keeps the most
// telling kinds first); EventsTruncated says when more were left out.
const maxTimelineEvents = 5000

// OfTenant keeps the curves of no tenant and those of tenant: another
// tenant's series are not for a view scoped to one. Without a tenant, all.
func OfTenant(curves []correlate.Curve, tenant string) []correlate.Curve {
	if tenant == "" {
		return curves
	}
	out := curves[:0:0]
	for _, c := range curves {
		if c.Scope.Tenant == "" || c.Scope.Tenant == tenant {
			out = append(out, c)
		}
	}
	return out
}

// timelineStep reads step (a duration or seconds), by default the window
// cut into ~300 buckets of whole seconds, at least the scrape step.
func timelineStep(c echo.Context, from, to time.Time) (time.Duration, error) {
	span := to.Sub(from)
	v := strings.TrimSpace(c.QueryParam("step"))
	if v == "" {
		step := (span/timelineDefaultPoints + time.Second - 1).Truncate(time.Second)
		return max(step, timelineMinStep), nil
	}
	step, err := time.ParseDuration(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, request.BadInput("step", "cannot parse %q to a valid duration", v)
		}
		step = time.Duration(f * float64(time.Second))
	}
	if step < time.Second {
		return 0, request.BadInput("step", "zero, negative or sub-second query resolution step widths are not accepted; try a positive duration such as 60s")
	}
	if span/step > timelineMaxPoints {
		return 0, request.BadInput("step", "exceeded maximum resolution of 11,000 points per timeseries; try decreasing the query resolution (?step=%ds)",
			int64((span/timelineMaxPoints+time.Second)/time.Second))
	}
	return step, nil
}

// timelineRoleList reads roles=latency_p99,qps; empty means all.
func timelineRoleList(v string) ([]correlate.Role, error) {
	var out []correlate.Role
	for _, r := range splitList(v) {
		ok := false
		for _, k := range timelineRoles {
			if correlate.Role(r) == k {
				ok = true
			}
		}
		if !ok {
			names := make([]string, len(timelineRoles))
			for i, k := range timelineRoles {
				names[i] = string(k)
			}
			return nil, request.BadInput("roles", "unknown role %q; known roles: %s", r, strings.Join(names, ", "))
		}
		out = append(out, correlate.Role(r))
	}
	return out, nil
}

// timelineLevelList reads levels=model,replica; explicit reports whether
// the parameter was given.
func timelineLevelList(v string) (out []correlate.Level, explicit bool, err error) {
	for _, l := range splitList(v) {
		ok := false
		for _, k := range timelineLevels {
			if correlate.Level(l) == k {
				ok = true
			}
		}
		if !ok {
			return nil, false, request.BadInput("levels", "unknown level %q; known levels: fleet, model, version, replica, node", l)
		}
		out = append(out, correlate.Level(l))
	}
	return out, len(out) > 0, nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
