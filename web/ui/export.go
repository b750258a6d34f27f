package ui

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// ExportIncident is GET /incidents/{id}/export.md: the incident as
// Markdown for a postmortem or a ticket, with the permalink and the chart
// card.
func (p *Pages) ExportIncident(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	d, err := p.loadIncident(ctx, id, false)
	if err != nil {
		return err
	}
	in := views.MarkdownInput{Incident: d.inc, Analysis: d.an, Version: d.version, Permalink: incident.Permalink(p.cfg.PublicURL, id), Now: p.now()}
	// The share link's token cannot be read back (only its hash is
	// stored): the export from a share link (/s/{token}/export.md) is the
	// one that carries it, and embeds its chart. This one's chart needs
	// a session, which no ticket's image fetcher has: a link.
	in.ChartLink = p.cfg.PublicURL + incidentPath(id) + "/og.png"
	return markdown(c, id, views.Markdown(in))
}

// markdown answers an export, shown inline (its caching is set where the
// routes are declared).
func markdown(c echo.Context, id int64, md string) error {
	h := c.Response().Header()
	h.Set("Content-Disposition", `inline; filename="incident-`+strconv.FormatInt(id, 10)+`.md"`)
	h.Set("X-Content-Type-Options", "nosniff")
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(md))
}

// ExportSharedIncident is GET /s/{token}/export.md: the same export for
// whoever holds the share link, linking back to it (not to the signed-in
// permalink, which they cannot open). It reads what the share page
// shows: the snapshot once frozen, never live data.
func (p *Pages) ExportSharedIncident(c echo.Context) error {
	id, base, err := p.sharedIncident(c)
	if err != nil {
		return err
	}
	d, err := p.loadIncident(c.Request().Context(), id, false)
	if err != nil {
		return err
	}
	p.sharedAnalysis(d)
	share := p.cfg.PublicURL + base
	return markdown(c, id, views.Markdown(views.MarkdownInput{Incident: d.inc, Analysis: d.an, Version: d.version,
		ShareURL: share, ImageURL: share + "/og.png", Now: p.now()}))
}
