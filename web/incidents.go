package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// incidentView is the flat, ticket-friendly incident of DESIGN §4.
type incidentView struct {
	ID             int64               `json:"id"`
	Title          string              `json:"title"`
	Status         string              `json:"status"`
	Source         string              `json:"source"`
	StartedAt      time.Time           `json:"started_at"`
	EndedAt        *time.Time          `json:"ended_at"`
	ResolvedAt     *time.Time          `json:"resolved_at"`
	Scope          correlate.Scope     `json:"scope"`
	TopCause       *store.CauseSummary `json:"top_cause"`
	AnalysisStatus string              `json:"analysis_status"` // none, pending, ready or failed
	URL            string              `json:"url"`
}

func (s *Server) incidentView(in store.Incident) incidentView {
	return newIncidentView(in, s.cfg.PublicURL)
}

// newIncidentView builds the summary; outbound webhooks send the same one.
func newIncidentView(in store.Incident, publicURL string) incidentView {
	st := in.AnalysisStatus
	if st == "" {
		st = "none"
	}
	return incidentView{
		ID: in.ID, Title: in.Title, Status: in.Status, Source: in.Source, StartedAt: in.Start, EndedAt: in.End,
		ResolvedAt: in.ResolvedAt, Scope: in.Scope, TopCause: in.TopCause, AnalysisStatus: st, URL: incidentURL(publicURL, in.ID),
	}
}

// incidentURL is the incident's permalink.
func (s *Server) incidentURL(id int64) string { return incidentURL(s.cfg.PublicURL, id) }

func incidentURL(publicURL string, id int64) string {
	return publicURL + "/incidents/" + strconv.FormatInt(id, 10)
}

// incidentChanged tells the analysis worker (if any) that an incident was
// created, extended or resolved.
func (s *Server) incidentChanged(id int64) {
	if s.onIncidentChanged != nil {
		s.onIncidentChanged(id)
	}
}

// incidentCreate is the body of POST /api/v1/incidents.
type incidentCreate struct {
	Title string           `json:"title"`
	Start string           `json:"start"`
	End   string           `json:"end"`
	Scope *correlate.Scope `json:"scope"`
}

// maxIncidentBody bounds POST /api/v1/incidents.
const maxIncidentBody = 64 << 10

// handleIncidentsCreate is POST /api/v1/incidents: a window (and scope) to
// explain → 201 with its id and permalink.
func (s *Server) handleIncidentsCreate(c echo.Context) error {
	raw, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxIncidentBody))
	if err != nil {
		var me *http.MaxBytesError
		if errors.As(err, &me) {
			return &inputError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body larger than %d bytes", maxIncidentBody)}
		}
		return badInput("", "reading the request body failed: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return badInput("", `empty body: send {"title", "start", "end", "scope"?}`)
	}
	var w incidentCreate
	if err := decodeRecord(raw, 0, &w); err != nil {
		return err
	}
	n, err := s.checkIncident(&w)
	if err != nil {
		return err
	}
	in, err := s.store.CreateIncident(c.Request().Context(), n)
	if err != nil {
		return err
	}
	s.incidentChanged(in.ID)
	return c.JSON(http.StatusCreated, s.incidentView(in))
}

func (s *Server) checkIncident(w *incidentCreate) (store.NewIncident, error) {
	w.Title = strings.TrimSpace(w.Title)
	if w.Title == "" {
		return store.NewIncident{}, invalid("title", "required")
	}
	if msg := checkText(w.Title, 500); msg != "" {
		return store.NewIncident{}, invalid("title", "%s", msg)
	}
	start, err := time.Parse(time.RFC3339Nano, w.Start)
	if err != nil {
		return store.NewIncident{}, invalid("start", "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", w.Start)
	}
	n := store.NewIncident{Title: w.Title, Source: store.SourceManual, Start: start.UTC()}
	if w.End != "" {
		end, err := time.Parse(time.RFC3339Nano, w.End)
		if err != nil {
			return store.NewIncident{}, invalid("end", "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", w.End)
		}
		if !end.After(start) {
			return store.NewIncident{}, invalid("end", "must be after start")
		}
		end = end.UTC()
		n.End = &end
	}
	if w.Scope != nil {
		for _, f := range []struct{ name, v string }{{"model", w.Scope.Model}, {"version", w.Scope.Version},
			{"tenant", w.Scope.Tenant}, {"replica", w.Scope.Replica}, {"node", w.Scope.Node}} {
			if msg := checkText(f.v, maxLabelLen); msg != "" {
				return store.NewIncident{}, invalid("scope."+f.name, "%s", msg)
			}
		}
		n.Scope = *w.Scope
	}
	return n, nil
}

// incidentPage is the answer of GET /api/v1/incidents.
type incidentPage struct {
	Incidents  []incidentView `json:"incidents"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// handleIncidentsList is GET /api/v1/incidents?status=&from=&to=&cursor=&limit=:
// newest first, paginated by an opaque cursor.
func (s *Server) handleIncidentsList(c echo.Context) error {
	f := store.IncidentFilter{Status: c.QueryParam("status"), Cursor: c.QueryParam("cursor")}
	if f.Status != "" && f.Status != store.IncidentOpen && f.Status != store.IncidentResolved {
		return badInput("status", "want open or resolved, got %q", f.Status)
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := c.QueryParam(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return badInput(p.name, "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
			}
			*p.dst = t
		}
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return badInput("limit", "want a number from 1 to 500, got %q", v)
		}
		f.Limit = n
	}
	list, next, err := s.store.ListIncidents(c.Request().Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		return badInput("cursor", "not a cursor from a previous page's next_cursor")
	}
	if err != nil {
		return err
	}
	page := incidentPage{Incidents: make([]incidentView, len(list)), NextCursor: next}
	for i, in := range list {
		page.Incidents[i] = s.incidentView(in)
	}
	return c.JSON(http.StatusOK, page)
}

// incidentID parses the {id} path parameter.
func incidentID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, store.ErrNotFound
	}
	return id, nil
}

// handleIncidentsGet is GET /api/v1/incidents/{id}: the flat summary.
func (s *Server) handleIncidentsGet(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	in, err := s.store.Incident(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.incidentView(in))
}

// handleIncidentsResolve is POST /api/v1/incidents/{id}/resolve; resolving
// twice is harmless.
func (s *Server) handleIncidentsResolve(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	before, err := s.store.Incident(c.Request().Context(), id)
	if err != nil {
		return err
	}
	in, err := s.store.ResolveIncident(c.Request().Context(), id, s.now())
	if err != nil {
		return err
	}
	if before.Status != in.Status {
		s.incidentChanged(id)
		s.snapshotOnResolve(c.Request().Context(), id) // the permalink outlives retention
	}
	return c.JSON(http.StatusOK, s.incidentView(in))
}
