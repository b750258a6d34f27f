package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ui"
)

// handleHome is GET /: open incidents with their top cause, recent spikes,
// pull health, and the latest resolved incidents.
func (s *Server) handleHome(c echo.Context) error {
	ctx := c.Request().Context()
	now := s.now()
	open, _, err := s.store.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen, Limit: 100})
	if err != nil {
		return err
	}
	resolved, _, err := s.store.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentResolved, Limit: 10})
	if err != nil {
		return err
	}
	// Spikes of any age, newest first: a replayed or backfilled history is
	// as interesting as the live edge.
	spikes, err := s.store.RecordedSpikes(ctx, time.Unix(0, 0), now.Add(24*time.Hour), 15)
	if err != nil {
		return err
	}
	ps, err := s.pullStatus(ctx)
	if err != nil {
		return err
	}
	srcs := make([]ui.PullSourceInput, len(ps.Sources))
	for i, src := range ps.Sources {
		srcs[i] = ui.PullSourceInput{PullSource: src.PullSource, LagSeconds: src.LagSeconds}
	}
	h := ui.HomePage{Open: ui.BuildIncidentRows(open, now), Recent: ui.BuildIncidentRows(resolved, now),
		Spikes: ui.BuildSpikeRows(spikes, now), Pull: ui.BuildPullHealth(srcs, ps.Summary.OpenGaps, ps.FilledGaps, ps.LeaderActive, now)}
	return s.page(c, http.StatusOK, ui.Page{Title: "Incidents", Nav: "home"}, ui.HomeBody(h))
}
