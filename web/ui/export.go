package ui

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// ExportIncident is GET /incidents/{id}/export.md: the incident as
// Markdown for a postmortem or a ticket, with the permalink.
func (p *Pages) ExportIncident(c echo.Context, id int64) error {
	d, err := p.loadIncident(c.Request().Context(), id, false)
	if err != nil {
		return err
	}
	md := views.Markdown(views.MarkdownInput{Incident: d.inc, Analysis: d.an, Version: d.version, Permalink: incident.Permalink(p.cfg.PublicURL, id), Now: p.now()})
	c.Response().Header().Set("Content-Disposition", `inline; filename="incident-`+strconv.FormatInt(id, 10)+`.md"`)
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(md))
}
