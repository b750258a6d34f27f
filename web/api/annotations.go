package api

import (
	"net/http"
	"strconv"

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
	if err == nil && e.Summary == "" {
		// As Grafana's POST (and the OpenAPI document): an annotation
		// says something. A body whose template came out empty ({} or
		// null) was stored as an event at now that says nothing.
		err = &request.Error{Status: http.StatusUnprocessableEntity, Field: "text", Msg: "required: what the annotation says"}
	}
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

// annotationFor finds the annotation a path's :id names (the number its
// POST answered).
func (a *API) annotationFor(c echo.Context) (correlate.Event, error) {
	prefix, err := ingest.AnnotationIDPrefix(c.Param("id"))
	if err != nil {
		return correlate.Event{}, err
	}
	return a.store.EventByIDPrefix(c.Request().Context(), prefix)
}

// PatchAnnotation is PATCH /api/annotations/{id}, as Grafana's: the
// fields the body gives change (a CD step that annotated a deploy's start
// sets its timeEnd when it ends); the id stays.
func (a *API) PatchAnnotation(c echo.Context) error {
	stored, err := a.annotationFor(c)
	if err != nil {
		return err // no such annotation: not an ingest error
	}
	e, err := ingest.PatchAnnotation(c.Request(), stored, a.eventLimits(), a.now())
	if err == nil {
		err = a.store.UpdateEvent(c.Request().Context(), e)
	}
	if err != nil {
		return a.ingestFailed(c, "annotations", err)
	}
	return c.JSON(http.StatusOK, wire.AnnotationResult{ID: annotationNumber(c), Message: "Annotation patched"})
}

// ReplaceAnnotation is PUT /api/annotations/{id}, as Grafana's: the body
// replaces the annotation (a time of 0 or none is now); the id stays.
func (a *API) ReplaceAnnotation(c echo.Context) error {
	stored, err := a.annotationFor(c)
	if err != nil {
		return err // no such annotation: not an ingest error
	}
	in, err := ingest.ReadAnnotation(c.Request(), a.eventLimits(), a.now())
	if err == nil {
		in.Event.ID = stored.ID
		err = a.store.UpdateEvent(c.Request().Context(), in.Event)
	}
	if err != nil {
		return a.ingestFailed(c, "annotations", err)
	}
	return c.JSON(http.StatusOK, wire.AnnotationResult{ID: annotationNumber(c), Message: "Annotation updated"})
}

// DeleteAnnotation is DELETE /api/annotations/{id}, as Grafana's.
func (a *API) DeleteAnnotation(c echo.Context) error {
	stored, err := a.annotationFor(c)
	if err == nil {
		err = a.store.DeleteEvent(c.Request().Context(), stored.ID)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.AnnotationResult{ID: annotationNumber(c), Message: "Annotation deleted"})
}

// annotationNumber is the path's :id, already checked by annotationFor.
func annotationNumber(c echo.Context) int64 {
	n, _ := strconv.ParseInt(c.Param("id"), 10, 64)
	return n
}
