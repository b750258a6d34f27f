package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// CreateAnnotation is POST /api/annotations: a Grafana annotation body,
// stored as a change event (ingest.Annotation). The answer is Grafana's,
// so a CD step that checks it passes; a retry stores nothing new and gets
// the same id.
func (a *API) CreateAnnotation(c echo.Context) error {
	in, err := ingest.ReadAnnotation(c.Request(), a.eventLimits(), a.now())
	e, id := in.Event, in.ID
	if err != nil {
		return a.ingestFailed(c, "annotations", err)
	}
	accepted, dups, err := a.store.InsertEvents(c.Request().Context(), []correlate.Event{e})
	if err != nil {
		return a.ingestFailed(c, "annotations", err)
	}
	if dups > 0 && c.Request().Header.Get("Idempotency-Key") != "" {
		stored, err := a.store.EventByID(c.Request().Context(), e.ID)
		if err != nil {
			return err
		}
		if !ingest.AnnotationMatches(stored, in) {
			return a.ingestFailed(c, "annotations", &request.Error{Status: http.StatusUnprocessableEntity, Field: "Idempotency-Key",
				Msg: "this key was used for another annotation; send a new key for a new one"})
		}
	}
	a.countIngest("annotations", accepted, dups)
	return c.JSON(http.StatusOK, wire.AnnotationResult{ID: id, Message: "Annotation added"})
}
