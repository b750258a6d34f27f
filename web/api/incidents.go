package api

import (
	"crypto/sha256"
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
// explain → 201 with its id and permalink. With an Idempotency-Key
// header a retry answers 200 with the incident the first request opened.
func (a *API) CreateIncident(c echo.Context) error {
	var w wire.IncidentCreate
	if err := ingest.ReadObject(c.Response(), c.Request(), maxIncidentBody, &w, `{"title", "start", "end", "scope"?}`); err != nil {
		return err
	}
	n, err := checkIncident(&w, a.cfg.Ingest, a.now())
	if err != nil {
		return err
	}
	if n.IdempotencyKey, err = idempotencyKey(c.Request().Header); err != nil {
		return err
	}
	if n.IdempotencyKey != "" {
		n.RequestHash = incidentHash(n)
	}
	in, created, err := a.incidents.OpenOnce(c.Request().Context(), n)
	var reused *store.KeyReusedError
	if errors.As(err, &reused) {
		return request.Invalid("Idempotency-Key", "already used for incident %d with a different title, window or scope; use a new key for a new incident", reused.IncidentID)
	}
	if err != nil {
		return err
	}
	if !created {
		// A retry: the incident the first request opened, as then.
		c.Response().Header().Set("Idempotent-Replayed", "true")
		return c.JSON(http.StatusOK, incident.Summary(in, a.cfg.PublicURL))
	}
	return c.JSON(http.StatusCreated, incident.Summary(in, a.cfg.PublicURL))
}

// maxIdempotencyKey bounds the Idempotency-Key header (a UUID is 36).
const maxIdempotencyKey = 255

// idempotencyKey reads the optional Idempotency-Key header
// (draft-ietf-httpapi-idempotency-key-header): printable ASCII, at most
// 255 characters.
func idempotencyKey(h http.Header) (string, error) {
	k := strings.TrimSpace(h.Get("Idempotency-Key"))
	k = strings.Trim(k, `"`) // the draft quotes it as a structured string
	if len(k) > maxIdempotencyKey {
		return "", request.BadInput("Idempotency-Key", "longer than %d characters", maxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", request.BadInput("Idempotency-Key", "want printable ASCII, such as a UUID")
		}
	}
	return k, nil
}

// incidentHash identifies what a creation asked for, so that a key
// reused for another incident is told from a retry.
func incidentHash(n store.NewIncident) []byte {
	h := sha256.New()
	end := ""
	if n.End != nil {
		end = n.End.UTC().Format(time.RFC3339Nano)
	}
	for _, f := range []string{n.Title, n.Start.UTC().Format(time.RFC3339Nano), end,
		n.Scope.Model, n.Scope.Version, n.Scope.Tenant, n.Scope.Replica, n.Scope.Node} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
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
	// Postgres keeps microseconds: times are compared as it will store them
	// (an end 800 ns after the start failed its check, a 500).
	start = start.Truncate(time.Microsecond)
	n := store.NewIncident{Title: w.Title, Source: store.SourceManual, Start: start.UTC()}
	if w.End != "" {
		end, msg := ingest.CheckTime(w.End, lim, now)
		if msg != "" {
			return store.NewIncident{}, request.Invalid("end", "%s", msg)
		}
		end = end.Truncate(time.Microsecond)
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

// ListIncidents is GET /api/v1/incidents?status=&source=&model=&from=&to=&cursor=&limit=:
// newest first, paginated by an opaque cursor. A parameter it does not
// know is a 400 (the route's query list): a filter an integration
// believes applied (a typo, a filter of another endpoint) would list
// every incident.
func (a *API) ListIncidents(c echo.Context) error {
	q := c.QueryParams() // only these: the route refuses any other (web/routes.go)
	f := store.IncidentFilter{Status: q.Get("status"), Source: q.Get("source"), Model: q.Get("model"), Cursor: q.Get("cursor")}
	if f.Status != "" && f.Status != store.IncidentOpen && f.Status != store.IncidentResolved {
		return request.BadInput("status", "want open or resolved, got %q", f.Status)
	}
	switch f.Source {
	case "", store.SourceManual, store.SourceAlertmanager, store.SourceDetector:
	default:
		return request.BadInput("source", "want manual, alertmanager or detector, got %q", f.Source)
	}
	if msg := request.CheckText(f.Model, request.MaxLabelLen); msg != "" {
		return request.BadInput("model", "%s", msg)
	}
	var err error
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		// 1970–9999, as every time parameter: a client's zero time
		// (0001-01-01) was read as no bound.
		if *p.dst, err = request.Time(q, p.name, time.Time{}); err != nil {
			return err
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return request.BadInput("to", "must be after from (%s), got %s", f.From.Format(time.RFC3339Nano), f.To.Format(time.RFC3339Nano))
	}
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
