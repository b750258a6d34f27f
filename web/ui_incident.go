package web

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
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ui"
)

// handleIncidentPage is GET /incidents/{id}: the permalink. An htmx request
// targeting #filtered or #sample-table gets only that region.
func (s *Server) handleIncidentPage(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	return s.incidentPage(c, id, "/incidents/"+strconv.FormatInt(id, 10), false)
}

// incidentPage renders the incident page (or one of its fragments) under
// base: /incidents/{id} for signed-in users, /s/{token} for a share link,
// which is read-only.
func (s *Server) incidentPage(c echo.Context, id int64, base string, readOnly bool) error {
	ctx := c.Request().Context()
	st, err := ui.ParseState(base, c.QueryParams())
	if err != nil {
		return badInput("", "%v", err)
	}
	d, err := s.loadIncident(ctx, id, st.Live)
	if err != nil {
		return err
	}
	if d.status == "" {
		s.incidentChanged(id) // nothing computed yet: make sure it is queued
	}
	switch fragmentTarget(c.Request()) {
	case "sample-table":
		t, err := s.sampleTable(ctx, d, st)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, ui.SampleTableView(t))
	case "filtered":
		f, err := s.filtered(ctx, d, st)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, ui.FilteredRegion(f))
	}
	f, err := s.filtered(ctx, d, st)
	if err != nil {
		return err
	}
	u, _ := uiUserOf(c)
	in := ui.IncidentInput{Incident: d.inc, Analysis: d.an, Status: d.status, Version: d.version, ComputedAt: d.computedAt,
		Recomputing: d.recomputing, Error: d.errMsg, SnapshotAt: d.snapAt, State: st, ReadOnly: readOnly,
		CanWrite: u.Scope.Allows(store.ScopeWrite), Now: s.now()}
	if !readOnly {
		tok, err := s.store.ShareToken(ctx, id)
		if err != nil {
			return err
		}
		if tok != "" {
			in.ShareURL = s.cfg.PublicURL + "/s/" + tok
		}
	}
	p := ui.BuildIncident(in)
	p.Filtered, p.CSRF = f, u.CSRF
	meta := ui.Page{Title: "#" + strconv.FormatInt(id, 10) + " " + d.inc.Title}
	if readOnly {
		meta.OG = s.openGraph(ctx, d, base)
		meta.Title = meta.OG.Title
	}
	return s.page(c, http.StatusOK, meta, ui.IncidentBody(p))
}

// viewWindow is the window a state shows: its from/to, or the default.
func (s *Server) viewWindow(d *incidentData, st ui.State) (time.Time, time.Time) {
	from, to := d.defaultWindow(s.now())
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
func (s *Server) filtered(ctx context.Context, d *incidentData, st ui.State) (ui.Filtered, error) {
	from, to := s.viewWindow(d, st)
	step := uiStep(from, to)
	scope := st.Scope
	scope.Tenant = "" // curves have no tenant
	tv, curves, err := s.timelineData(ctx, d, from, to, step, scope)
	if err != nil {
		return ui.Filtered{}, err
	}
	in := ui.TimelineInput{From: from, To: to, Step: step, Curves: curves, Events: tv.Events, Filter: st.Scope,
		State: st, Target: "#filtered"}
	if d.an != nil {
		in.Onset, in.Spikes = d.an.Onset, d.an.Spikes
		if len(d.an.Scope.Models) > 0 {
			in.StageModel = d.an.Scope.Models[0]
		}
	}
	if in.StageModel == "" {
		in.StageModel = d.inc.Scope.Model
	}
	f := ui.Filtered{Base: st.Base, Timeline: ui.BuildTimeline(in)}
	f.Chips, f.Clear = ui.FilterChips(st)
	if d.an != nil {
		f.Conc = ui.BuildConc(d.an.Concentration, st)
	} else {
		f.Conc = ui.BuildConc(nil, st)
	}
	if f.Samples, err = s.sampleTable(ctx, d, st); err != nil {
		return ui.Filtered{}, err
	}
	return f, nil
}

// timelineData loads (through the short-lived cache) the timeline of a
// window: curves and events as the API's timeline selects them, plus GPU
// memory totalled per node (it is exported per pod only).
func (s *Server) timelineData(ctx context.Context, d *incidentData, from, to time.Time, step time.Duration,
	scope correlate.Scope) (timelineView, []correlate.Curve, error) {
	type result struct {
		tv     timelineView
		curves []correlate.Curve
	}
	src, ttl := d.sourceKey()
	key := fmt.Sprintf("tl|%s|%d|%d|%d|%s", src, from.UnixMilli(), to.UnixMilli(), step, scope)
	v, err := s.viewData.get(ctx, key, ttl, func(ctx context.Context) (any, error) {
		tv, err := s.timeline(ctx, d.src, timelineQuery{From: from, To: to, Step: step, Scope: scope})
		if err != nil {
			return nil, err
		}
		curves := tv.Curves
		if scope.Replica == "" && scope.Node == "" {
			reps, err := d.src.Curves(ctx, store.CurveFilter{From: from, To: to.Add(time.Nanosecond), Step: step,
				Roles: []correlate.Role{correlate.RoleGPUMemUsed}, Levels: []correlate.Level{correlate.LevelReplica}, Scope: scope})
			if err != nil {
				return nil, err
			}
			curves = append(slices.Clip(curves), ui.NodeTotals(reps, correlate.RoleGPUMemUsed)...)
		}
		return result{tv, curves}, nil
	})
	if err != nil {
		return timelineView{}, nil, err
	}
	r := v.(result)
	return r.tv, r.curves, nil
}

// samplesPage loads a page of samples through the short-lived cache.
func (s *Server) samplesPage(ctx context.Context, d *incidentData, q store.SampleQuery) (store.SamplePage, error) {
	src, ttl := d.sourceKey()
	v, err := s.viewData.get(ctx, fmt.Sprintf("sp|%s|%+v", src, q), ttl, func(ctx context.Context) (any, error) {
		return d.src.SamplesPage(ctx, q)
	})
	if err != nil {
		return store.SamplePage{}, err
	}
	return v.(store.SamplePage), nil
}

// sampleQuery is the sample table's query for a state: the during window
// (or the zoomed one), the filters, slow or baseline, order and page.
func (s *Server) sampleQuery(d *incidentData, st ui.State) store.SampleQuery {
	from, to := d.duringWindow(s.now())
	if !st.From.IsZero() || !st.To.IsZero() {
		from, to = s.viewWindow(d, st)
	}
	slowMs, def := d.slowThresholds()
	q := store.SampleQuery{From: from, To: to, Scope: st.Scope, Entry: st.Entry, Status: st.Status,
		SlowMs: slowMs, DefaultSlowMs: def, Sort: st.Sort, Desc: !st.Asc,
		Offset: (max(st.Page, 1) - 1) * ui.SamplePageSize, Limit: ui.SamplePageSize}
	if st.Sort == "time" {
		q.Desc = !st.Asc
	}
	if lo, hi, ok := ui.BatchRange(st.Batch); ok && st.Batch != "" {
		q.BatchMin, q.BatchMax = lo, hi
	}
	if st.Tab == "baseline" {
		q.NotSlow = true
	} else {
		q.Slow = true
	}
	return q
}

func (s *Server) sampleTable(ctx context.Context, d *incidentData, st ui.State) (ui.SampleTable, error) {
	q := s.sampleQuery(d, st)
	page, err := s.samplesPage(ctx, d, q)
	if err != nil {
		return ui.SampleTable{}, err
	}
	windowTotal := page.Total
	if page.Total == 0 {
		// Empty: tell "nothing was ever sent" from "nothing matches".
		all, err := s.samplesPage(ctx, d, store.SampleQuery{From: q.From, To: q.To, Limit: 1})
		if err != nil {
			return ui.SampleTable{}, err
		}
		windowTotal = all.Total
	}
	slowMs, _ := d.slowThresholds()
	return ui.BuildSampleTable(ui.SampleTableInput{Page: page, State: st, WindowTotal: windowTotal, SlowMs: slowMs,
		DetailBase: st.Base + "/samples", Ref: q.From}), nil
}

// handleIncidentStatus is GET /incidents/{id}/status, polled while the
// analysis is pending: the banner again, or HX-Refresh once it is ready.
func (s *Server) handleIncidentStatus(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	latest, err := s.store.LatestAnalysis(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := s.store.Incident(c.Request().Context(), id); err != nil {
			return err
		}
		return render(c, http.StatusOK, ui.AnalysisBanner(ui.AnalysisState{Status: "none", PollURL: c.Request().URL.Path}))
	}
	if err != nil {
		return err
	}
	if latest.Status != store.AnalysisPending {
		c.Response().Header().Set("HX-Refresh", "true")
		return c.NoContent(http.StatusOK)
	}
	return render(c, http.StatusOK, ui.AnalysisBanner(ui.AnalysisState{Status: "pending", PollURL: c.Request().URL.Path}))
}

// handleSampleDetail is GET /incidents/{id}/samples/{rid}?t=<unix ms>.
func (s *Server) handleSampleDetail(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	return s.sampleDetail(c, id, c.QueryParam("live") == "1")
}

func (s *Server) sampleDetail(c echo.Context, id int64, live bool) error {
	ms, err := strconv.ParseInt(c.QueryParam("t"), 10, 64)
	if err != nil {
		return badInput("t", "want the sample's time in Unix milliseconds, got %q", c.QueryParam("t"))
	}
	d, err := s.loadIncident(c.Request().Context(), id, live)
	if err != nil {
		return err
	}
	at := time.UnixMilli(ms).UTC()
	x, err := d.src.SampleByID(c.Request().Context(), at.Add(-time.Millisecond), at.Add(time.Millisecond), c.Param("rid"))
	if err != nil {
		return err
	}
	var stages []correlate.StageShare
	if d.an != nil {
		stages = d.an.Stages
	}
	v := ui.BuildSampleDetail(x, stages)
	if fragmentTarget(c.Request()) != "" {
		return render(c, http.StatusOK, ui.SampleDetailView(v))
	}
	return s.page(c, http.StatusOK, ui.Page{Title: "Request " + x.RequestID}, ui.SampleDetailView(v))
}
