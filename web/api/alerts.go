package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/wire"
)

// ReceiveAlertmanager is POST /api/v1/alerts/alertmanager. It does its
// work in one short transaction and answers at once (a resolved incident
// is frozen afterwards, on the incident worker): Alertmanager retries on
// 5xx, so the work is idempotent on (groupKey, fingerprint, startsAt).
func (a *API) ReceiveAlertmanager(c echo.Context) error {
	g, err := ingest.Alertmanager(c.Response(), c.Request(), a.cfg.Ingest, a.now(), a.cfg.ModelAliases)
	if err != nil {
		return err
	}
	out, err := a.incidents.ApplyAlerts(c.Request().Context(), g, a.cfg.AlertLookback)
	if err != nil {
		return err
	}
	a.countIngest("alerts", out.NewAlerts, len(g.Alerts)-out.NewAlerts)
	url := "" // alerts that name no model are events only: no incident
	if out.IncidentID != 0 {
		url = incident.Permalink(a.cfg.PublicURL, out.IncidentID)
	}
	return c.JSON(http.StatusOK, wire.AlertResult{
		IncidentID: out.IncidentID, URL: url, Opened: out.Opened,
		Extended: out.Extended, Resolved: out.Resolved, Alerts: len(g.Alerts), NewAlerts: out.NewAlerts,
	})
}
