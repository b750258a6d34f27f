package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/wire"
)

// CreateShareLink is POST /api/v1/incidents/{id}/share (write): make the
// incident's read-only link for people without an account, replacing its
// previous link (which stops working). Only the link's hash is kept, so
// this answer is the only place its URL appears.
func (a *API) CreateShareLink(c echo.Context, id int64) error {
	tok, err := a.store.CreateShareLink(c.Request().Context(), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, wire.ShareLink{URL: incident.ShareURL(a.cfg.PublicURL, tok)})
}

// RevokeShareLink is DELETE /api/v1/incidents/{id}/share (write): every
// link to the incident stops working, the ones webhooks carried too.
// Revoking an unshared incident is harmless.
func (a *API) RevokeShareLink(c echo.Context, id int64) error {
	if err := a.store.RevokeShare(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
