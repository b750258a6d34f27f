package ui

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// ShowHome is GET /: open incidents with their top cause, recent spikes,
// pull health, and the latest resolved incidents.
func (p *Pages) ShowHome(c echo.Context) error {
	ctx := c.Request().Context()
	now := p.now()
	open, _, err := p.store.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen, Limit: 100})
	if err != nil {
		return err
	}
	resolved, _, err := p.store.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentResolved, Limit: 10})
	if err != nil {
		return err
	}
	// Spikes of any age, newest first: a replayed or backfilled history is
	// as interesting as the live edge.
	spikes, err := p.store.RecordedSpikes(ctx, time.Unix(0, 0), now.Add(24*time.Hour), 15)
	if err != nil {
		return err
	}
	ps, err := api.PullStatus(ctx, p.store, now)
	if err != nil {
		return err
	}
	all := append(append([]store.Incident(nil), open...), resolved...)
	ids := make([]int64, 0, len(all))
	for _, in := range all {
		ids = append(ids, in.ID)
	}
	sp, err := p.store.IncidentSpikes(ctx, ids)
	if err != nil {
		return err
	}
	h := views.HomePage{Open: views.BuildIncidentRows(open, sp, now), Recent: views.BuildIncidentRows(resolved, sp, now),
		Spikes: views.BuildSpikeRows(spikes, all, now), Pull: views.BuildPullHealth(ps, now),
		DetectorOn: p.cfg.DetectorOn, DetectorOpens: p.cfg.DetectorOn && p.cfg.DetectorOpens}
	return p.page(c, http.StatusOK, views.Page{Title: "Incidents", Nav: "home"}, views.HomeBody(h))
}
