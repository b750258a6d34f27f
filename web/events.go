package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
)

// eventWire is one change event as clients send it (DESIGN §5).
type eventWire struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	Time    string          `json:"time"`
	EndTime string          `json:"end_time"`
	Model   string          `json:"model"`
	Version string          `json:"version"`
	Tenant  string          `json:"tenant"`
	Replica string          `json:"replica"`
	Node    string          `json:"node"`
	Source  string          `json:"source"`
	Summary string          `json:"summary"`
	Attrs   json.RawMessage `json:"attrs"`
}

// handleEventsCreate is POST /api/v1/events: change events, all-or-nothing,
// idempotent by id (or by a hash of the content when there is none).
func (s *Server) handleEventsCreate(c echo.Context) error {
	body, err := s.openIngestBody(c)
	if err != nil {
		return s.ingestFailed(c, "events", err)
	}
	defer body.close()
	now := s.now()
	var events []correlate.Event
	for {
		raw, line, err := body.records.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.metrics.ingestBytes.WithLabelValues("events").Add(float64(body.counted.n))
			return s.ingestFailed(c, "events", err)
		}
		var w eventWire
		if err := decodeRecord(raw, line, &w); err != nil {
			return s.ingestFailed(c, "events", err)
		}
		e, err := s.checkEvent(&w, line, now)
		if err != nil {
			return s.ingestFailed(c, "events", err)
		}
		events = append(events, e)
	}
	s.metrics.ingestBytes.WithLabelValues("events").Add(float64(body.counted.n))
	accepted, dups, err := s.store.InsertEvents(c.Request().Context(), events)
	if err != nil {
		return s.ingestFailed(c, "events", err)
	}
	s.countIngest("events", accepted, dups)
	return c.JSON(http.StatusOK, ingestResult{Accepted: accepted, Duplicates: dups})
}

// checkEvent validates one event and gives it its id.
func (s *Server) checkEvent(w *eventWire, line int, now time.Time) (correlate.Event, error) {
	bad := func(field, format string, args ...any) error {
		return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	kind := correlate.EventKind(w.Kind)
	if w.Kind == "" {
		return correlate.Event{}, bad("kind", "required")
	}
	if !kind.Valid() {
		known := make([]string, len(correlate.EventKinds))
		for i, k := range correlate.EventKinds {
			known[i] = string(k)
		}
		return correlate.Event{}, bad("kind", "unknown kind %q; known kinds: %s", w.Kind, strings.Join(known, ", "))
	}
	for _, f := range []struct{ name, v string }{{"id", w.ID}, {"model", w.Model}, {"version", w.Version},
		{"tenant", w.Tenant}, {"replica", w.Replica}, {"node", w.Node}, {"source", w.Source}} {
		if msg := checkText(f.v, maxLabelLen); msg != "" {
			return correlate.Event{}, bad(f.name, "%s", msg)
		}
	}
	if msg := checkText(w.Summary, 4096); msg != "" {
		return correlate.Event{}, bad("summary", "%s", msg)
	}
	t, msg := s.checkTime(w.Time, now)
	if msg != "" {
		return correlate.Event{}, bad("time", "%s", msg)
	}
	e := correlate.Event{
		ID: w.ID, Kind: kind, Time: t, Source: w.Source, Summary: w.Summary,
		Scope: correlate.Scope{Model: w.Model, Version: w.Version, Tenant: w.Tenant, Replica: w.Replica, Node: w.Node},
	}
	if w.EndTime != "" {
		end, msg := s.checkTime(w.EndTime, now)
		if msg != "" {
			return correlate.Event{}, bad("end_time", "%s", msg)
		}
		if end.Before(t) {
			return correlate.Event{}, bad("end_time", "is before time")
		}
		e.EndTime = &end
	}
	if len(w.Attrs) > 0 && string(w.Attrs) != "null" {
		if len(w.Attrs) > 16<<10 {
			return correlate.Event{}, bad("attrs", "larger than 16 KiB")
		}
		if err := json.Unmarshal(w.Attrs, &e.Attrs); err != nil {
			return correlate.Event{}, bad("attrs", "want an object")
		}
		if hasNUL(e.Attrs) {
			return correlate.Event{}, bad("attrs", "must not contain NUL characters")
		}
	}
	if e.ID == "" {
		e.ID = contentID(e)
	}
	return e, nil
}

// contentID is the idempotency key of an event sent without an id: the
// same kind, time, scope and summary is the same event.
func contentID(e correlate.Event) string {
	h := sha256.New()
	for _, f := range []string{string(e.Kind), e.Time.UTC().Format(time.RFC3339Nano), e.Model, e.Version, e.Tenant,
		e.Replica, e.Node, e.Summary} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:32]
}

// hasNUL reports whether a decoded JSON value holds a NUL anywhere (jsonb
// rejects it).
func hasNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case map[string]any:
		for k, v := range x {
			if strings.IndexByte(k, 0) >= 0 || hasNUL(v) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if hasNUL(v) {
				return true
			}
		}
	}
	return false
}
