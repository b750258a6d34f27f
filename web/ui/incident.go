package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/ui/views"
	"github.com/waterline-dev/waterline/wire"
)

// ShowIncident is GET /incidents/{id}: the permalink. An htmx request
// targeting #filtered or #sample-table gets only that region.
func (p *Pages) ShowIncident(c echo.Context, id int64) error {
	if fragmentTarget(c.Request()) == "" {
		if u := p.takeNewShare(c, id); u != "" { // right after making a link: shown once, never cached
			c.Set(newShareURLKey, u)
			return p.incidentPage(c, id, incidentPath(id), false)
		}
	}
	return p.showIncidentCached(c, id) // pagecache.go; renders with incidentPage
}

// incidentPage renders the incident page (or one of its fragments) under
// base: /incidents/{id} for signed-in users, /s/{token} for a share link,
// which is read-only.
func (p *Pages) incidentPage(c echo.Context, id int64, base string, readOnly bool) error {
	ctx := c.Request().Context()
	st, err := views.ParseState(base, c.QueryParams())
	if err != nil {
		return request.BadInput("", "%v", err)
	}
	if readOnly {
		st.Live = false // a share link shows the snapshot once there is one
	}
	d, err := p.loadIncident(ctx, id, st.Live)
	if err != nil {
		return err
	}
	if readOnly {
		if st, err = p.clampShared(d, st); err != nil {
			return err
		}
		if st, err = p.scopeShared(d, st); err != nil {
			return err
		}
		// The incident's scope is the link's own view, which it cannot
		// leave: its filters (a concentration row, a cause's target) are
		// on top of it, as on the signed-in page.
		st.Default, st.Fleet = d.inc.Scope, false
		p.sharedAnalysis(d)
	} else {
		// Signed in, the page opens on the incident's scope as its share
		// link does, as a filter the user may remove.
		st = st.DefaultTo(d.inc.Scope)
	}
	// A zoom is bounded; the incident's own window always shows.
	if from, to := p.viewWindow(d, st); (!st.From.IsZero() || !st.To.IsZero()) && to.Sub(from) > maxViewWindow {
		return request.BadInput("from", "window of %s is longer than 31 days; narrow from/to", to.Sub(from))
	}
	if d.status == "" {
		p.incidents.Notify(id) // nothing computed yet: make sure it is queued
	}
	switch fragmentTarget(c.Request()) {
	case "sample-table":
		t, err := p.sampleTable(ctx, d, st)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, views.SampleTableView(t))
	case "bubbleup":
		sel, err := views.ParseSelection(c.QueryParam("hsel"))
		if err != nil {
			return request.BadInput("hsel", "%v", err)
		}
		from, to := p.viewWindow(d, st)
		hs, err := p.heatSamples(ctx, d, from, to, st.Scope)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, views.BubbleUpView(views.BuildBubbleUp(hs, sel, st)))
	case "filtered":
		f, err := p.filtered(ctx, d, st, readOnly)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, views.FilteredRegion(f))
	}
	// A browser's navigation gets the page without what lies below the
	// fold (timeline, concentration, samples): htmx loads that region when
	// it is scrolled into view. Whatever runs no script (a crawler, curl,
	// the tests' HTTP clients) sends no Sec-Fetch-Mode and gets it whole.
	var f views.Filtered
	if lazyNavigation(c.Request()) {
		f = views.Filtered{Base: st.Base, Lazy: st.URL(), Whole: wholePage(st.URL()), Window: views.WindowOf(st)}
	} else if f, err = p.filtered(ctx, d, st, readOnly); err != nil {
		return err
	}
	u, _ := userOf(c)
	in := views.IncidentInput{Incident: d.inc, Analysis: d.an, Status: d.status, Version: d.version, ComputedAt: d.computedAt,
		Recomputing: d.recomputing, Error: d.errMsg, SnapshotAt: d.snapAt, State: st, ReadOnly: readOnly,
		CanWrite: u.Scope.Allows(store.ScopeWrite), Now: p.now()}
	if !readOnly {
		link, ok, err := p.store.IncidentShareLink(ctx, id)
		if err != nil {
			return err
		}
		if ok {
			in.SharedAt = &link.CreatedAt
		}
		if in.WebhookShares, err = p.store.WebhookShareLinks(ctx, id); err != nil {
			return err
		}
		in.ShareURL, _ = c.Get(newShareURLKey).(string) // only right after it was made
	}
	v := views.BuildIncident(in)
	v.Filtered, v.CSRF = f, u.CSRF
	meta := views.Page{Title: "#" + strconv.FormatInt(id, 10) + " " + d.inc.Title}
	if readOnly {
		meta.OG = p.openGraph(ctx, d, base)
		meta.Title, meta.Shared = meta.OG.Title, true
	}
	return p.page(c, http.StatusOK, meta, views.IncidentBody(v))
}

// maxViewWindow bounds the window a page reads, as the API's timeline
// and spikes are bounded.
const maxViewWindow = 31 * 24 * time.Hour

// viewWindow is the window a state shows: its from/to, or the default.
func (p *Pages) viewWindow(d *incidentData, st views.State) (time.Time, time.Time) {
	from, to := d.view().Window(p.now())
	if !st.From.IsZero() {
		from = st.From
	}
	if !st.To.IsZero() {
		to = st.To
	}
	if !from.Before(to) {
		to = from.Add(time.Hour)
	}
	return from, to
}

// filtered loads the region filters and zooms reload: timeline, the
// concentration table and the sample table.
func (p *Pages) filtered(ctx context.Context, d *incidentData, st views.State, readOnly bool) (views.Filtered, error) {
	from, to := p.viewWindow(d, st)
	step := incident.ChartStep(from, to)
	tv, curves, err := p.timelineData(ctx, d, from, to, step, st.Scope)
	if err != nil {
		return views.Filtered{}, err
	}
	in := views.TimelineInput{From: from, To: to, Step: step, Curves: curves, Events: tv.Events, Filter: st.Scope,
		State: st, Target: "#filtered"}
	if d.an != nil {
		in.Onset, in.OnsetGapFrom, in.Spikes = d.an.Onset, d.an.OnsetGapFrom, d.an.Spikes
		in.Tenant = views.TenantDriver(d.an, st)
	}
	in.StageModel = storyModel(d)
	f := views.Filtered{Base: st.Base, Timeline: views.BuildTimeline(in), Window: views.WindowOf(st)}
	var fixed correlate.Scope
	if readOnly {
		fixed = d.inc.Scope // a share link puts it back on every request (scopeShared)
	}
	f.Chips, f.Clear = views.FilterChips(st, fixed)
	if d.an != nil {
		f.Conc = views.BuildConc(d.an.Concentration, st, d.an)
	} else {
		f.Conc = views.BuildConc(nil, st, nil)
	}
	if f.Samples, err = p.sampleTable(ctx, d, st); err != nil {
		return views.Filtered{}, err
	}
	hs, err := p.heatSamples(ctx, d, from, to, st.Scope)
	if err != nil {
		return views.Filtered{}, err
	}
	slowMs, def := d.view().SlowThresholds()
	several := len(slowMs) > 1
	if ms, ok := slowMs[st.Scope.Model]; ok && st.Scope.Model != "" {
		// Filtered to one model: its samples are all the heatmap draws, so
		// its threshold is the line, not another model's lower one.
		def, several = ms, false
	}
	h := views.BuildHeatmap(hs, from, to, def, st)
	if h.Empty == "" {
		// The samples drawn are thinned (the faster ones, re-weighted):
		// the view's own count is the stored one.
		all, err := p.samplesPage(ctx, d, store.SampleQuery{From: from, To: to, Scope: st.Scope, Limit: 1})
		if err != nil {
			return views.Filtered{}, err
		}
		h.Count = max(all.Total, h.Count)
	}
	h.SlowOfSeveral = several
	if d.an != nil {
		h.SetOnset(d.an.Onset, d.an.OnsetGapFrom)
	}
	f.Heat = &h
	return f, nil
}

// storyModel is the model the incident's story is about: the analysis'
// headline model, else the first affected one, else the incident's scope.
func storyModel(d *incidentData) string {
	if d.an != nil {
		if d.an.Headline.Model != "" {
			return d.an.Headline.Model
		}
		if len(d.an.Scope.Models) > 0 {
			return d.an.Scope.Models[0]
		}
	}
	return d.inc.Scope.Model
}

// timelineKey is timelineData's cache key: everything the data depends
// on, the incident's story model included (its GPU lanes): live data is
// shared by every incident, and two with one window and scope swapped
// their GPU lanes.
func timelineKey(d *incidentData, from, to time.Time, step time.Duration, scope correlate.Scope) (string, time.Duration) {
	src, ttl := d.sourceKey()
	return fmt.Sprintf("tl|%s|%d|%d|%d|%s|%s", src, from.UnixMilli(), to.UnixMilli(), step, scope, storyModel(d)), ttl
}

// timelineData loads (through the short-lived cache) the timeline of a
// window: curves and events as the API's timeline selects them, plus GPU
// memory totalled per node (it is exported per pod only).
func (p *Pages) timelineData(ctx context.Context, d *incidentData, from, to time.Time, step time.Duration,
	scope correlate.Scope) (wire.Timeline, []correlate.Curve, error) {
	key, ttl := timelineKey(d, from, to, step, scope)
	v, err := p.viewData.get(ctx, key, ttl, func(ctx context.Context) (any, error) {
		tv, err := api.Timeline(ctx, d.src, api.TimelineQuery{From: from, To: to, Step: step, Scope: scope, CurvesAnyTenant: true})
		if err != nil {
			return nil, err
		}
		curves := tv.Curves
		if scope.Replica == "" && scope.Node == "" {
			cscope := scope
			cscope.Tenant = ""
			reps, err := d.src.Curves(ctx, store.CurveFilter{From: from, To: to.Add(time.Nanosecond), Step: step,
				Roles: []correlate.Role{correlate.RoleGPUMemUsed}, Levels: []correlate.Level{correlate.LevelReplica}, Scope: cscope})
			if err != nil {
				return nil, err
			}
			reps = api.OfTenant(reps, scope.Tenant)
			curves = append(slices.Clip(curves), views.NodeTotals(reps, correlate.RoleGPUMemUsed)...)
			// The GPU utilisation of the hardest-hit model's replicas: what
			// the capacity evidence quotes ("GPUs of the affected replicas
			// at 94 %"), which a node's average over all its GPUs hides.
			if m := storyModel(d); m != "" && (scope.Model == "" || scope.Model == m) {
				gpu, err := d.src.Curves(ctx, store.CurveFilter{From: from, To: to.Add(time.Nanosecond), Step: step,
					Roles: []correlate.Role{correlate.RoleGPUUtil}, Levels: []correlate.Level{correlate.LevelReplica},
					Scope: correlate.Scope{Model: m, Version: scope.Version}})
				if err != nil {
					return nil, err
				}
				curves = append(curves, api.OfTenant(gpu, scope.Tenant)...)
			}
		}
		return timelineResult{tv, curves}, nil
	})
	if err != nil {
		return wire.Timeline{}, nil, err
	}
	r := v.(timelineResult)
	return r.tv, r.curves, nil
}

// timelineResult is a timeline's cached load: its answer and the curves
// the page draws beside it.
type timelineResult struct {
	tv     wire.Timeline
	curves []correlate.Curve
}

// samplesPage loads a page of samples through the short-lived cache.
func (p *Pages) samplesPage(ctx context.Context, d *incidentData, q store.SampleQuery) (store.SamplePage, error) {
	src, ttl := d.sourceKey()
	v, err := p.viewData.get(ctx, fmt.Sprintf("sp|%s|%+v", src, q), ttl, func(ctx context.Context) (any, error) {
		return d.src.SamplesPage(ctx, q)
	})
	if err != nil {
		return store.SamplePage{}, err
	}
	return v.(store.SamplePage), nil
}

// sampleQuery is the sample table's query for a state: the during window
// (or the zoomed one), the filters, slow or baseline, order and page.
func (p *Pages) sampleQuery(d *incidentData, st views.State) store.SampleQuery {
	from, to := d.view().During(p.now())
	if !st.From.IsZero() || !st.To.IsZero() {
		from, to = p.viewWindow(d, st)
	}
	slowMs, def := d.view().SlowThresholds()
	q := store.SampleQuery{From: from, To: to, Scope: st.Scope, Entry: st.Entry, Status: st.Status,
		SlowMs: slowMs, DefaultSlowMs: def, Sort: st.Sort, Desc: !st.Asc,
		Offset: (max(st.Page, 1) - 1) * views.SamplePageSize, Limit: views.SamplePageSize, Spread: st.Spread()}
	if st.Sort == "time" {
		q.Desc = !st.Asc
	}
	if lo, hi, ok := views.BatchRange(st.Batch); ok && st.Batch != "" {
		q.BatchMin, q.BatchMax = lo, hi
	}
	if st.Tab == "baseline" {
		q.NotSlow = true
	} else {
		q.Slow = true
	}
	return q
}

func (p *Pages) sampleTable(ctx context.Context, d *incidentData, st views.State) (views.SampleTable, error) {
	q := p.sampleQuery(d, st)
	page, err := p.samplesPage(ctx, d, q)
	if err != nil {
		return views.SampleTable{}, err
	}
	windowTotal := page.Total
	if page.Total == 0 {
		// Empty: tell "nothing was ever sent" from "nothing matches" —
		// within the incident's own scope, which is all a share link may
		// learn anything about (another tenant's samples are not its news).
		all, err := p.samplesPage(ctx, d, store.SampleQuery{From: q.From, To: q.To, Scope: d.inc.Scope, Limit: 1})
		if err != nil {
			return views.SampleTable{}, err
		}
		windowTotal = all.Total
	}
	slowMs, def := d.view().SlowThresholds()
	return views.BuildSampleTable(views.SampleTableInput{Page: page, State: st, WindowTotal: windowTotal, SlowMs: slowMs, DefaultSlowMs: def,
		DetailBase: st.Base + "/samples", Ref: q.From, To: q.To}), nil
}

// ShowIncidentStatus is GET /incidents/{id}/status?shown=N, polled by a
// page showing analysis version N (0: none): while one is pending, the
// banner again (recomputing, when N is shown meanwhile); once a first
// analysis is ready, HX-Refresh; and once a version newer than N is
// ready, a banner offering it — a page being read is not reloaded under
// its reader (an open incident is re-analysed as data comes in).
func (p *Pages) ShowIncidentStatus(c echo.Context, id int64) error {
	return p.analysisStatus(c, id)
}

// ShowSharedStatus is GET /s/{token}/status?shown=N: the same poll for a
// share page. The token is all that names the incident — there is no id
// to tamper with — and the answer says only how far its analysis got.
func (p *Pages) ShowSharedStatus(c echo.Context) error {
	id, _, err := p.sharedIncident(c)
	if err != nil {
		return err
	}
	return p.analysisStatus(c, id)
}

// analysisStatus answers a status poll of incident id; the poll URL it
// hands back is the request's own path (/incidents/{id}/status or
// /s/{token}/status).
func (p *Pages) analysisStatus(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	shown, _ := strconv.Atoi(c.QueryParam("shown"))
	poll := c.Request().URL.Path + "?shown=" + strconv.Itoa(max(shown, 0))
	_, status, ready, err := p.store.AnalysisVersions(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := p.store.Incident(ctx, id); err != nil {
			return err
		}
		return render(c, http.StatusOK, views.AnalysisBanner(views.AnalysisState{Status: "none", PollURL: poll}))
	}
	if err != nil {
		return err
	}
	switch {
	case shown == 0 && status == store.AnalysisFailed && ready == 0:
		// Nothing to show yet: the analyzer tries again, keep waiting.
		return render(c, http.StatusOK, views.AnalysisBanner(views.AnalysisState{Status: string(status), PollURL: poll}))
	case shown == 0 && status != store.AnalysisPending:
		c.Response().Header().Set("HX-Refresh", "true")
		return c.NoContent(http.StatusOK)
	case shown > 0 && ready > shown:
		return render(c, http.StatusOK, views.AnalysisBanner(views.AnalysisState{Status: "ready", Version: shown, Newer: ready}))
	case status == store.AnalysisPending:
		return render(c, http.StatusOK, views.AnalysisBanner(views.AnalysisState{Status: "pending", PollURL: poll,
			Recomputing: shown > 0, Version: shown}))
	case status == store.AnalysisFailed:
		// A re-run of the version shown failed; the next may not.
		return render(c, http.StatusOK, views.AnalysisBanner(views.AnalysisState{Status: string(status), Version: shown, PollURL: poll}))
	}
	return render(c, http.StatusOK, views.AnalysisBanner(views.AnalysisState{Status: string(status), Version: shown, PollURL: poll, Quiet: true}))
}

// ShowSample is GET /incidents/{id}/samples/{rid}?t=<unix ms>.
func (p *Pages) ShowSample(c echo.Context, id int64) error {
	return p.sampleDetail(c, id, c.QueryParam("live") == "1", false, incidentPath(id))
}

// sampleDetail shows one sample; shared (a share link) opens only samples
// inside the incident's window, from its snapshot once it has one. back
// is the incident's page, which the full page links to.
func (p *Pages) sampleDetail(c echo.Context, id int64, live, shared bool, back string) error {
	ms, err := strconv.ParseInt(c.QueryParam("t"), 10, 64)
	if err != nil {
		return request.BadInput("t", "want the sample's time in Unix milliseconds, got %q", c.QueryParam("t"))
	}
	d, err := p.loadIncident(c.Request().Context(), id, live)
	if err != nil {
		return err
	}
	rid := c.Param("rid")
	if len(rid) > request.MaxLabelLen {
		return request.BadInput("rid", "a request id is at most %d bytes, got %d", request.MaxLabelLen, len(rid))
	}
	at := time.UnixMilli(ms).UTC()
	if shared && !p.inSharedWindow(d, at) {
		return store.ErrNotFound
	}
	x, err := d.src.SampleByID(c.Request().Context(), at.Add(-time.Millisecond), at.Add(time.Millisecond), rid)
	if err != nil {
		return err
	}
	// The lookup spans ±1 ms around t: a sample just outside the shared
	// window, asked for at its edge, stays outside.
	if shared && (!p.inSharedWindow(d, x.Time) || !p.inSharedScope(d, x)) {
		return store.ErrNotFound
	}
	v := views.BuildSampleDetail(x, d.an)
	if fragmentTarget(c.Request()) != "" {
		return render(c, http.StatusOK, views.SampleDetailView(v))
	}
	return p.page(c, http.StatusOK, views.Page{Title: "Request " + x.RequestID, Shared: shared}, views.SampleDetailPage(v, back))
}
