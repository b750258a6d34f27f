package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// Snapshot limits: the slow samples are kept (up to a cap) because they
// are the evidence; the others only as a baseline to compare with.
const (
	snapshotMaxSlow     = 20000
	snapshotMaxBaseline = 2000
	snapshotMaxEvents   = 10000
)

// freezeIncident stores a frozen copy of what the incident page shows over
// its default window — curves (aggregate levels at ~4× the page's
// resolution, replica curves at the page's), events, the slow samples and
// a capped, evenly spread baseline, and the newest ready analysis — so the
// permalink stays complete after retention drops the data.
func (s *Server) freezeIncident(ctx context.Context, id int64) error {
	d, err := s.loadIncident(ctx, id, true)
	if err != nil {
		return err
	}
	now := s.now()
	from, to := d.defaultWindow(now)
	end := to.Add(time.Nanosecond)
	fine := max(uiStep(from, to)/4, 15*time.Second)
	sn := store.Snapshot{IncidentID: id, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	agg, err := s.store.Curves(ctx, store.CurveFilter{From: from, To: end, Step: fine, MaxRoles: timelineMaxRoles,
		Levels: []correlate.Level{correlate.LevelFleet, correlate.LevelModel, correlate.LevelVersion, correlate.LevelNode}})
	if err != nil {
		return err
	}
	reps, err := s.store.Curves(ctx, store.CurveFilter{From: from, To: end, Step: uiStep(from, to), MaxRoles: timelineMaxRoles,
		Levels: []correlate.Level{correlate.LevelReplica}})
	if err != nil {
		return err
	}
	sn.FrozenCurves = append(agg, reps...)
	if sn.FrozenEvents, err = s.store.Events(ctx, store.EventFilter{From: from, To: end, Limit: snapshotMaxEvents}); err != nil {
		return err
	}
	slowMs, def := d.slowThresholds()
	var others []correlate.Sample
	err = s.store.ScanSamples(ctx, store.SampleFilter{From: from, To: end}, func(x *correlate.Sample) error {
		thr, ok := slowMs[x.Model]
		if !ok {
			thr = def
		}
		switch {
		case x.TotalMs >= thr && len(sn.FrozenSamples) < snapshotMaxSlow:
			sn.FrozenSamples = append(sn.FrozenSamples, *x)
		case x.TotalMs < thr:
			others = append(others, *x)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// An even spread over time rather than the first N: the baseline
	// should cover the whole window.
	if n := len(others); n > snapshotMaxBaseline {
		for i := 0; i < snapshotMaxBaseline; i++ {
			sn.FrozenSamples = append(sn.FrozenSamples, others[i*n/snapshotMaxBaseline])
		}
	} else {
		sn.FrozenSamples = append(sn.FrozenSamples, others...)
	}
	rec, err := s.store.LatestReadyAnalysis(ctx, id)
	switch {
	case err == nil:
		sn.Analysis = json.RawMessage(rec.Result)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	return s.store.SaveSnapshot(ctx, sn)
}

// snapshotOnResolve freezes an incident that was just resolved. A failure
// is logged, not returned: the resolution itself has succeeded, and the
// freeze button can retry.
func (s *Server) snapshotOnResolve(ctx context.Context, id int64) {
	start := time.Now()
	if err := s.freezeIncident(ctx, id); err != nil {
		s.log.WarnContext(ctx, "snapshot on resolve failed", "incident", id, "err", err)
		return
	}
	s.log.InfoContext(ctx, "incident frozen", "incident", id, "ms", time.Since(start).Milliseconds())
}

// handleIncidentFreeze is POST /incidents/{id}/freeze.
func (s *Server) handleIncidentFreeze(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	if err := s.freezeIncident(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/incidents/"+strconv.FormatInt(id, 10))
}

// handleIncidentResolveUI is POST /incidents/{id}/resolve from the page:
// resolve, freeze, and show the page again.
func (s *Server) handleIncidentResolveUI(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	before, err := s.store.Incident(ctx, id)
	if err != nil {
		return err
	}
	in, err := s.store.ResolveIncident(ctx, id, s.now())
	if err != nil {
		return err
	}
	if before.Status != in.Status {
		s.incidentChanged(id)
		s.snapshotOnResolve(ctx, id)
	}
	return c.Redirect(http.StatusSeeOther, "/incidents/"+strconv.FormatInt(id, 10))
}
