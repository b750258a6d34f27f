package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// CreateSamples is POST /api/v1/samples: request samples, streamed from
// the body straight into the database's COPY, all-or-nothing. The router
// bounds how many run at once.
func (a *API) CreateSamples(c echo.Context) error {
	body, err := ingest.Open(c.Request(), a.cfg.Ingest)
	if err != nil {
		return a.ingestFailed(c, "samples", err)
	}
	defer body.Close()
	accepted, dups, err := a.store.InsertSampleStream(c.Request().Context(), ingest.Samples(body, a.sampleLimits(), a.now()))
	a.metrics.ingestBytes.WithLabelValues("samples").Add(float64(body.Read()))
	if err != nil {
		return a.ingestFailed(c, "samples", err)
	}
	a.countIngest("samples", accepted, dups)
	return c.JSON(http.StatusOK, wire.IngestResult{Accepted: accepted, Duplicates: dups})
}

// CreateEvents is POST /api/v1/events: change events, all-or-nothing,
// idempotent by id (or by a hash of the content when there is none).
func (a *API) CreateEvents(c echo.Context) error {
	body, err := ingest.Open(c.Request(), a.cfg.Ingest)
	if err != nil {
		return a.ingestFailed(c, "events", err)
	}
	defer body.Close()
	events, lines, err := ingest.Events(body, a.eventLimits(), a.now())
	a.metrics.ingestBytes.WithLabelValues("events").Add(float64(body.Read()))
	if err != nil {
		return a.ingestFailed(c, "events", err)
	}
	accepted, dups, err := a.store.ReportEvents(c.Request().Context(), events)
	var conflict *store.EventConflict
	if errors.As(err, &conflict) {
		err = &request.Error{Status: http.StatusUnprocessableEntity, Line: lines[conflict.Index], Field: "id",
			Msg: fmt.Sprintf("%q is already stored with another %s: an id names one change, so a retry repeats it and a new change needs a new id (nothing of this request was stored)",
				conflict.ID, conflict.Field)}
	}
	if err != nil {
		return a.ingestFailed(c, "events", err)
	}
	a.countIngest("events", accepted, dups)
	return c.JSON(http.StatusOK, wire.IngestResult{Accepted: accepted, Duplicates: dups})
}

// countIngest records what an ingest request stored.
func (a *API) countIngest(kind string, accepted, duplicates int) {
	a.metrics.ingestRecords.WithLabelValues(kind, "accepted").Add(float64(accepted))
	a.metrics.ingestRecords.WithLabelValues(kind, "duplicate").Add(float64(duplicates))
}

// maxDrain bounds how much of a rejected body is read and thrown away.
const maxDrain = 64 << 20

// ingestFailed counts a rejected ingest request and returns err for the
// error handler. A client still sending a body it has not finished would
// otherwise see a reset connection instead of the error, so the rest of a
// rejected body is drained first (within maxDrain and the request's time
// limit).
func (a *API) ingestFailed(c echo.Context, kind string, err error) error {
	reason := "store"
	var re *request.Error
	if errors.As(err, &re) {
		switch re.Status {
		case http.StatusBadRequest:
			reason = "syntax"
		case http.StatusRequestEntityTooLarge:
			reason = "too_large"
		case http.StatusUnsupportedMediaType:
			reason = "media_type"
		default:
			reason = "invalid"
		}
		if re.Status != http.StatusRequestEntityTooLarge {
			_, _ = io.Copy(io.Discard, io.LimitReader(c.Request().Body, maxDrain))
		}
	}
	a.metrics.ingestErrors.WithLabelValues(kind, reason).Inc()
	return err
}
