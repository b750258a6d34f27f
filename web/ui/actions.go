package ui

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
)

// FreezeIncident is POST /incidents/{id}/freeze: keep what the page shows
// now, whatever retention drops later.
func (p *Pages) FreezeIncident(c echo.Context, id int64) error {
	if err := p.incidents.Freeze(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, incidentPath(id))
}

// ResolveIncident is POST /incidents/{id}/resolve from the page: resolve,
// freeze, and show the page again (now the frozen copy).
func (p *Pages) ResolveIncident(c echo.Context, id int64) error {
	if _, err := p.incidents.Resolve(c.Request().Context(), id, incident.FreezeNow); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, incidentPath(id))
}
