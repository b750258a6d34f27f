package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// GetAnalysis is GET /api/v1/incidents/{id}/analysis: the newest analysis
// (or ?version=N) as wire.Analysis. While the first analysis runs the
// answer is {"status": "pending"}; while a newer version is being computed
// the previous one is served with "recomputing": true, and after a newer
// version failed, with "error" saying so.
func (a *API) GetAnalysis(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	if _, err := a.store.Incident(ctx, id); err != nil {
		return err
	}
	version := c.QueryParam("version")
	var (
		rec store.AnalysisRecord
		err error
	)
	if version != "" {
		n, perr := strconv.ParseInt(version, 10, 32) // versions are int4
		if perr != nil || n < 1 {
			return request.BadInput("version", "want a positive integer, got %q", version)
		}
		rec, err = a.store.AnalysisVersion(ctx, id, int(n))
	} else {
		rec, err = a.store.LatestAnalysis(ctx, id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound) && version == "":
		a.incidents.Notify(id) // nothing computed yet: make sure it is queued
		return c.JSON(http.StatusOK, wire.Analysis{Status: store.AnalysisPending, IncidentID: id})
	case err != nil:
		return err
	}
	recomputing, newerFailed := false, ""
	if (rec.Status == store.AnalysisPending || rec.Status == store.AnalysisFailed) && version == "" {
		// A newer version being computed, or one that failed (a database
		// blip, a restart mid-way), does not hide the last good one: a
		// resolved incident is not computed again, and read "failed"
		// for good while a ready result existed.
		ready, rerr := a.store.LatestReadyAnalysis(ctx, id)
		if rerr == nil {
			if rec.Status == store.AnalysisFailed {
				newerFailed = fmt.Sprintf("version %d failed: %s", rec.Version, rec.Error)
			}
			rec, recomputing = ready, rec.Status == store.AnalysisPending
		}
	}
	if rec.Status != store.AnalysisReady || len(rec.Result) < 2 {
		return c.JSON(http.StatusOK, wire.Analysis{Status: rec.Status, IncidentID: id, Version: rec.Version, Error: rec.Error})
	}
	// The stored result is a JSON object; splice the status fields in front
	// rather than decoding and re-encoding a large document.
	head := `{"status":"ready","incident_id":` + strconv.FormatInt(id, 10) +
		`,"version":` + strconv.Itoa(rec.Version) +
		`,"recomputing":` + strconv.FormatBool(recomputing) + errorField(newerFailed) +
		`,"computed_at":"` + rec.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00") + `",`
	body := append([]byte(head), rec.Result[1:]...)
	return c.JSONBlob(http.StatusOK, body)
}

// errorField is `,"error":"…"` for a non-empty message, else nothing.
func errorField(msg string) string {
	if msg == "" {
		return ""
	}
	b, _ := json.Marshal(msg)
	return `,"error":` + string(b)
}
