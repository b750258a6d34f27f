package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// handleAnalysisGet is GET /api/v1/incidents/{id}/analysis: the newest
// analysis (or ?version=N), as {"status", "version", "incident_id", …the
// correlate.Analysis fields}. While the first analysis runs the answer is
// {"status": "pending"}; while a newer version is being computed the
// previous one is served with "recomputing": true.
func (s *Server) handleAnalysisGet(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.Incident(ctx, id); err != nil {
		return err
	}
	var rec store.AnalysisRecord
	if v := c.QueryParam("version"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 {
			return badInput("version", "want a positive integer, got %q", v)
		}
		rec, err = s.store.AnalysisVersion(ctx, id, n)
	} else {
		rec, err = s.store.LatestAnalysis(ctx, id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound) && c.QueryParam("version") == "":
		s.incidentChanged(id) // nothing computed yet: make sure it is queued
		return c.JSON(http.StatusOK, map[string]any{"status": store.AnalysisPending, "incident_id": id})
	case err != nil:
		return err
	}
	recomputing := false
	if rec.Status == store.AnalysisPending && c.QueryParam("version") == "" {
		ready, rerr := s.store.LatestReadyAnalysis(ctx, id)
		if rerr == nil {
			rec, recomputing = ready, true
		}
	}
	if rec.Status != store.AnalysisReady || len(rec.Result) < 2 {
		body := map[string]any{"status": rec.Status, "incident_id": id, "version": rec.Version}
		if rec.Error != "" {
			body["error"] = rec.Error
		}
		return c.JSON(http.StatusOK, body)
	}
	// The stored result is a JSON object; splice the status fields in front
	// rather than decoding and re-encoding a large document.
	head := `{"status":"ready","incident_id":` + strconv.FormatInt(id, 10) +
		`,"version":` + strconv.Itoa(rec.Version) +
		`,"recomputing":` + strconv.FormatBool(recomputing) +
		`,"computed_at":"` + rec.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00") + `",`
	body := append([]byte(head), rec.Result[1:]...)
	return c.JSONBlob(http.StatusOK, body)
}
