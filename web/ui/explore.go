package ui

import (
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// exploreDefaultSpan is the explorer's window when the URL names none.
const exploreDefaultSpan = 3 * time.Hour

// ShowExplore is GET /explore?from=&to=&model=&version=&tenant=
// &replica=&node=: the timeline of any window. Every choice is in the URL
// (the form and zooms push it), so back/forward and links reproduce it.
func (p *Pages) ShowExplore(c echo.Context) error {
	ctx := c.Request().Context()
	st, err := views.ParseState("/explore", c.QueryParams())
	if err != nil {
		return request.BadInput("", "%v", err)
	}
	now := p.now()
	from, to := st.From, st.To
	switch {
	case from.IsZero() && to.IsZero():
		to = now.Truncate(time.Minute)
		from = to.Add(-exploreDefaultSpan)
	case from.IsZero():
		from = to.Add(-exploreDefaultSpan)
	case to.IsZero():
		to = from.Add(exploreDefaultSpan)
	}
	if to.Sub(from) > maxViewWindow {
		return request.BadInput("from", "window of %s is longer than 31 days; narrow from/to", to.Sub(from))
	}
	step := incident.ChartStep(from, to)
	// The tenant narrows the events; curves mostly carry none.
	tv, err := api.Timeline(ctx, p.store, api.TimelineQuery{From: from, To: to, Step: step, Scope: st.Scope, CurvesAnyTenant: true})
	if err != nil {
		return err
	}
	curves := tv.Curves
	if scope := st.Scope; scope.Replica == "" && scope.Node == "" {
		scope.Tenant = ""
		reps, err := p.store.Curves(ctx, store.CurveFilter{From: from, To: to.Add(time.Nanosecond), Step: step,
			Roles: []correlate.Role{correlate.RoleGPUMemUsed}, Levels: []correlate.Level{correlate.LevelReplica}, Scope: scope})
		if err != nil {
			return err
		}
		reps = api.OfTenant(reps, st.Scope.Tenant)
		curves = append(curves, views.NodeTotals(reps, correlate.RoleGPUMemUsed)...)
	}
	events := tv.Events
	// The spikes overlapping the window (one that began before it shows
	// too) of the filtered scope, filtered before the limit: another
	// model's many spikes must not push this one's out.
	spikes, err := p.store.SpikesOverlapping(ctx, from, to, st.Scope, 500)
	if err != nil {
		return err
	}
	sp := make([]correlate.Spike, 0, len(spikes))
	for _, r := range spikes {
		sp = append(sp, r.Spike)
	}
	// The form's fields say UTC: a server in another zone wrote its own.
	// Only a window the URL names fills the form: the default one stays
	// empty (its bounds as placeholders), so a filter applied later keeps
	// the live window instead of pinning the one the page loaded with.
	e := views.ExplorePage{FromHint: from.UTC().Format(time.RFC3339), ToHint: to.UTC().Format(time.RFC3339), State: st,
		Timeline: views.BuildTimeline(views.TimelineInput{From: from, To: to, Step: step, Curves: curves, Events: events,
			Spikes: sp, Filter: st.Scope, State: st, Target: "#filtered"}),
		Options: dimOptions(tv.Curves)}
	if !st.From.IsZero() || !st.To.IsZero() {
		e.From, e.To = from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)
	}
	e.Chips, e.Clear = views.FilterChips(st, correlate.Scope{})
	for i := len(events) - 1; i >= 0; i-- {
		if len(e.Events) == 100 {
			e.MoreEvents = i + 1
			break
		}
		ev := events[i]
		e.Events = append(e.Events, views.ExploreEvent{Time: views.FmtTime(ev.Time, from), Kind: string(ev.Kind), Scope: ev.Scope.String(),
			Summary: ev.Summary, Source: ev.Source})
	}
	if fragmentTarget(c.Request()) == "filtered" {
		return render(c, http.StatusOK, views.ExploreBody(e))
	}
	return p.page(c, http.StatusOK, views.Page{Title: "Explore", Nav: "explore"}, views.ExploreBody(e))
}

// dimOptions lists the values each dimension takes in the curves shown,
// for the filter inputs' suggestions.
func dimOptions(curves []correlate.Curve) map[string][]string {
	sets := map[string]map[string]bool{"model": {}, "version": {}, "replica": {}, "node": {}}
	for _, c := range curves {
		for k, v := range map[string]string{"model": c.Scope.Model, "version": c.Scope.Version, "replica": c.Scope.Replica, "node": c.Scope.Node} {
			if v != "" {
				sets[k][v] = true
			}
		}
	}
	out := map[string][]string{}
	for k, set := range sets {
		for v := range set {
			out[k] = append(out[k], v)
		}
		sort.Strings(out[k])
	}
	return out
}
