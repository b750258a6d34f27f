package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// maxIncidentBody bounds POST /api/v1/incidents.
const maxIncidentBody = 64 << 10

// CreateIncident is POST /api/v1/incidents: a window (and scope) to
// explain → 201 with its id and permalink.
func (a *API) CreateIncident(c echo.Context) error {
	var w wire.IncidentCreate
	if err := ingest.ReadObject(c.Response(), c.Request(), maxIncidentBody, &w, `{"title", "start", "end", "scope"?}`); err != nil {
		return err
	}
	n, err := checkIncident(&w, a.cfg.Ingest, a.now())
	if err != nil {
		return err
	}
	in, err := a.incidents.Open(c.Request().Context(), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, incident.Summary(in, a.cfg.PublicURL))
}

// checkIncident validates a new incident. Its window must lie where data
// can: within the ingest limits' age and future bounds around now.
func checkIncident(w *wire.IncidentCreate, lim ingest.Limits, now time.Time) (store.NewIncident, error) {
	w.Title = strings.TrimSpace(w.Title)
	if w.Title == "" {
		return store.NewIncident{}, request.Invalid("title", "required")
	}
	if msg := request.CheckText(w.Title, 500); msg != "" {
		return store.NewIncident{}, request.Invalid("title", "%s", msg)
	}
	start, msg := ingest.CheckTime(w.Start, lim, now)
	if msg != "" {
		return store.NewIncident{}, request.Invalid("start", "%s", msg)
	}
	n := store.NewIncident{Title: w.Title, Source: store.SourceManual, Start: start.UTC()}
	if w.End != "" {
		end, msg := ingest.CheckTime(w.End, lim, now)
		if msg != "" {
			return store.NewIncident{}, request.Invalid("end", "%s", msg)
		}
		if !end.After(start) {
			return store.NewIncident{}, request.Invalid("end", "must be after start")
		}
		end = end.UTC()
		n.End = &end
	}
	if w.Scope != nil {
		for _, f := range []struct{ name, v string }{{"model", w.Scope.Model}, {"version", w.Scope.Version},
			{"tenant", w.Scope.Tenant}, {"replica", w.Scope.Replica}, {"node", w.Scope.Node}} {
			if msg := request.CheckText(f.v, request.MaxLabelLen); msg != "" {
				return store.NewIncident{}, request.Invalid("scope."+f.name, "%s", msg)
			}
		}
		n.Scope = *w.Scope
	}
	return n, nil
}

// ListIncidents is GET /api/v1/incidents?status=&from=&to=&cursor=&limit=:
// newest first, paginated by an opaque cursor.
func (a *API) ListIncidents(c echo.Context) error {
	q := c.QueryParams()
	f := store.IncidentFilter{Status: q.Get("status"), Cursor: q.Get("cursor")}
	if f.Status != "" && f.Status != store.IncidentOpen && f.Status != store.IncidentResolved {
		return request.BadInput("status", "want open or resolved, got %q", f.Status)
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return request.BadInput(p.name, "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
			}
			*p.dst = t
		}
	}
	var err error
	if f.Limit, err = request.Limit(q, 0, 500); err != nil {
		return err
	}
	list, next, err := a.store.ListIncidents(c.Request().Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		return request.BadInput("cursor", "not a cursor from a previous page's next_cursor")
	}
	if err != nil {
		return err
	}
	page := wire.IncidentPage{Incidents: make([]wire.Incident, len(list)), NextCursor: next}
	for i, in := range list {
		page.Incidents[i] = incident.Summary(in, a.cfg.PublicURL)
	}
	return c.JSON(http.StatusOK, page)
}

// GetIncident is GET /api/v1/incidents/{id}: the flat summary.
func (a *API) GetIncident(c echo.Context, id int64) error {
	in, err := a.store.Incident(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, incident.Summary(in, a.cfg.PublicURL))
}

// ResolveIncident is POST /api/v1/incidents/{id}/resolve; resolving twice
// is harmless. The incident is frozen before the answer, so the permalink
// it returns already outlives retention.
func (a *API) ResolveIncident(c echo.Context, id int64) error {
	in, err := a.incidents.Resolve(c.Request().Context(), id, incident.FreezeNow)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, incident.Summary(in, a.cfg.PublicURL))
}
