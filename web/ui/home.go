package ui

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// homeOpenPage is how many open incidents the home page lists at once.
const homeOpenPage = 100

// ShowHome is GET /?open_cursor=: open incidents with their top cause
// (a page of them, newest start first, with a link to the next page and
// the total), recent spikes, pull health, and the incidents resolved
// last.
func (p *Pages) ShowHome(c echo.Context) error {
	ctx := c.Request().Context()
	now := p.now()
	cursor := c.QueryParam("open_cursor")
	open, next, err := p.store.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen, Limit: homeOpenPage, Cursor: cursor})
	if errors.Is(err, store.ErrBadCursor) {
		return request.BadInput("open_cursor", "not a cursor from the home page's link to older open incidents")
	}
	if err != nil {
		return err
	}
	openTotal := len(open)
	if next != "" || cursor != "" {
		if openTotal, err = p.store.CountIncidents(ctx, store.IncidentOpen); err != nil {
			return err
		}
	}
	resolved, err := p.store.RecentlyResolved(ctx, 10)
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
		DetectorOn: p.cfg.DetectorOn, DetectorOpens: p.cfg.DetectorOn && p.cfg.DetectorOpens,
		OpenTotal: openTotal, OpenOlder: views.HomeOpenPageHref(next), OpenNewest: cursor != "",
		Refresh: "/", Updated: views.FmtTime(now, now)}
	if cursor != "" {
		h.Refresh = views.HomeOpenPageHref(cursor)
	}
	return p.page(c, http.StatusOK, views.Page{Title: "Incidents", Nav: "home"}, views.HomeBody(h))
}
