package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/web/ui"
)

// handleIncidentExport is GET /incidents/{id}/export.md: the incident as
// Markdown for a postmortem or a ticket, with the permalink.
func (s *Server) handleIncidentExport(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	d, err := s.loadIncident(c.Request().Context(), id, false)
	if err != nil {
		return err
	}
	md := ui.Markdown(ui.MarkdownInput{Incident: d.inc, Analysis: d.an, Version: d.version, Permalink: s.incidentURL(id), Now: s.now()})
	c.Response().Header().Set("Content-Disposition", `inline; filename="incident-`+strconv.FormatInt(id, 10)+`.md"`)
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(md))
}
