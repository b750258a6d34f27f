package ingest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// maxAnnotationBytes bounds one annotation body: Grafana's is a handful
// of fields.
const maxAnnotationBytes = 64 << 10

// Annotation reads a Grafana annotation (POST /api/annotations, the body
// Grafana's HTTP API takes) as a change event:
//   - time and timeEnd are Unix milliseconds (time absent or 0 is now; a
//     timeEnd before time is swapped with it); any Content-Type is read
//     as JSON;
//   - the kind is the first tag that names an event kind ("deploy",
//     "config_change", or "kind:deploy"), else "annotation";
//   - key:value tags set the scope (model, version, tenant, replica or
//     pod, node) and the source ("source:github-actions");
//   - text is the summary; every tag is kept in attrs.tags;
//   - dashboardUID, dashboardId and panelId are ignored.
//
// The event's id is a hash of what it says (kind, times, scope, text,
// tags), so a retry stores nothing new; without a time, its minute, or
// the Idempotency-Key header when one is sent. The numeric id Grafana
// answers with is derived from it.
func Annotation(req *http.Request, lim Limits, now time.Time) (correlate.Event, int64, error) {
	in, err := ReadAnnotation(req, lim, now)
	return in.Event, in.ID, err
}

// AnnotationIn is an annotation read as a change event.
type AnnotationIn struct {
	Event correlate.Event
	ID    int64 // the number Grafana answers with
	// Timed: the body gave every time it has (time, and timeEnd if any),
	// so a retry under the same Idempotency-Key must give the same ones.
	Timed bool
}

// ReadAnnotation is Annotation, saying also whether the body gave its
// times (AnnotationMatches needs it).
func ReadAnnotation(req *http.Request, lim Limits, now time.Time) (AnnotationIn, error) {
	e, id, timed, err := readAnnotation(req, lim, now)
	return AnnotationIn{Event: e, ID: id, Timed: timed}, err
}

func readAnnotation(req *http.Request, lim Limits, now time.Time) (correlate.Event, int64, bool, error) {
	// The body is read as JSON whatever its Content-Type, as Grafana's
	// binding does: `curl -d` sends form encoding.
	raw, err := io.ReadAll(&limitReader{r: req.Body, max: min(lim.MaxBytes, maxAnnotationBytes)})
	if err != nil {
		if err == errTooLarge {
			return correlate.Event{}, 0, false, &request.Error{Status: http.StatusRequestEntityTooLarge,
				Msg: fmt.Sprintf("annotation larger than %d bytes", min(lim.MaxBytes, maxAnnotationBytes))}
		}
		return correlate.Event{}, 0, false, ReadFailed(err, "reading the body")
	}
	var w wire.Annotation
	if err := json.Unmarshal(raw, &w); err != nil {
		// Unknown fields are ignored, as Grafana does: a tool's body made
		// for a newer Grafana still lands.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return correlate.Event{}, 0, false, &request.Error{Status: http.StatusUnprocessableEntity, Field: te.Field,
				Msg: fmt.Sprintf("want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)}
		}
		return correlate.Event{}, 0, false, &request.Error{Status: http.StatusBadRequest, Msg: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	bad := func(field, format string, args ...any) error {
		return &request.Error{Status: http.StatusUnprocessableEntity, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	e := correlate.Event{Kind: correlate.KindAnnotation, Summary: w.Text}
	if msg := request.CheckText(w.Text, 4096); msg != "" {
		return correlate.Event{}, 0, false, bad("text", "%s", msg)
	}
	if len(w.Tags) > 64 {
		return correlate.Event{}, 0, false, bad("tags", "at most 64 tags, got %d", len(w.Tags))
	}
	kindSet := false
	for i, tag := range w.Tags {
		field := fmt.Sprintf("tags[%d]", i)
		if msg := request.CheckText(tag, request.MaxLabelLen); msg != "" {
			return correlate.Event{}, 0, false, bad(field, "%s", msg)
		}
		key, val, hasVal := strings.Cut(tag, ":")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !hasVal {
			if k := correlate.EventKind(key); !kindSet && k.Valid() {
				e.Kind, kindSet = k, true
			}
			continue
		}
		var dst *string
		switch key {
		case "kind":
			k := correlate.EventKind(strings.ToLower(val))
			if !k.Valid() {
				return correlate.Event{}, 0, false, bad(field, "unknown kind %q", val)
			}
			e.Kind, kindSet = k, true
			continue
		case "model":
			dst = &e.Model
		case "version":
			dst = &e.Version
		case "tenant":
			dst = &e.Tenant
		case "replica", "pod":
			dst = &e.Replica
		case "node":
			dst = &e.Node
		case "source":
			dst = &e.Source
		default:
			continue // another key:value tag: kept in attrs only
		}
		if *dst != "" && *dst != val {
			return correlate.Event{}, 0, false, bad(field, "a second %s (%q, already %q): an event has one scope", key, val, *dst)
		}
		*dst = val
	}
	if e.Source == "" {
		e.Source = "annotation"
	}
	// Without a time (or time 0, as in Grafana) the annotation is now, to
	// the millisecond. Its identity is what the sender said: an explicit
	// time as given, an implicit one as its minute (a retry within the
	// minute stays one event), and the two ends in time order (a reversed
	// region is swapped, as Grafana does). An Idempotency-Key header names
	// the annotation instead of its times: a retry across a minute's end
	// is still one event, and two alike within a minute are two.
	at := func(ms *int64) (time.Time, string) {
		if ms == nil || *ms == 0 {
			return now.UTC().Truncate(time.Millisecond), now.UTC().Truncate(time.Minute).Format(time.RFC3339Nano)
		}
		t := time.UnixMilli(*ms).UTC()
		return t, t.Format(time.RFC3339Nano)
	}
	t, idStart := at(w.Time)
	if msg := inWindow(t, lim, now); msg != "" {
		return correlate.Event{}, 0, false, bad("time", "%s", msg)
	}
	e.Time = t
	idEnd := ""
	if w.TimeEnd != nil && *w.TimeEnd != 0 && !time.UnixMilli(*w.TimeEnd).Equal(t) {
		end, id := at(w.TimeEnd)
		if msg := inWindow(end, lim, now); msg != "" {
			return correlate.Event{}, 0, false, bad("timeEnd", "%s", msg)
		}
		idEnd = id
		if end.Before(t) {
			t, end = end, t
			idStart, idEnd = idEnd, idStart
			e.Time = t
		}
		e.EndTime = &end
	}
	keyed := false
	if key := req.Header.Get("Idempotency-Key"); key != "" {
		if msg := request.CheckText(key, request.MaxLabelLen); msg != "" {
			return correlate.Event{}, 0, false, bad("Idempotency-Key", "%s", msg)
		}
		idStart, idEnd = "key\x00"+key, ""
		keyed = true
	}
	if len(w.Tags) > 0 {
		e.Attrs = map[string]any{"tags": w.Tags}
	}
	// With a key, the key alone names the event: a retry is the same one,
	// and the same key with another body is caught by the caller
	// (AnnotationMatches).
	h := sha256.New()
	if keyed {
		h.Write([]byte(idStart))
	} else {
		for _, f := range []string{string(e.Kind), idStart, idEnd, e.Model, e.Version, e.Tenant, e.Replica,
			e.Node, e.Source, e.Summary} {
			h.Write([]byte(f))
			h.Write([]byte{0})
		}
		tags, _ := json.Marshal(w.Tags)
		h.Write(tags)
	}
	sum := h.Sum(nil)
	e.ID = "annotation:" + hex.EncodeToString(sum[:16])
	// Grafana answers a number; 52 bits of the same hash stay exact in
	// JavaScript and are the same for a retry.
	id := int64(binary.BigEndian.Uint64(sum[:8]) >> 12)
	// timeEnd is never implicit: absent or 0, there is no end.
	return e, id, w.Time != nil && *w.Time != 0, nil
}

// jsonKind words a Go kind as a JSON type.
func jsonKind(k string) string {
	switch k {
	case "int64", "int", "float64":
		return "a number (Unix milliseconds)"
	case "string":
		return "a string"
	case "slice":
		return "an array of strings"
	}
	return "an object"
}

// inWindow says what is wrong with t against the accepted window ("" if
// nothing).
func inWindow(t time.Time, lim Limits, now time.Time) string {
	// As checkTime: Postgres holds no far-past time, and events start in 1970.
	if t.Before(minTime) {
		return fmt.Sprintf("%s is before 1970", t.Format(time.RFC3339))
	}
	if !lim.Oldest.IsZero() && t.Before(lim.Oldest) {
		return fmt.Sprintf("%s is before %s: %s", t.Format(time.RFC3339), lim.Oldest.Format(time.RFC3339), lim.OldestWhy)
	}
	if lim.MaxAge > 0 && t.Before(now.Add(-lim.MaxAge)) {
		return fmt.Sprintf("%s is more than %s in the past", t.Format(time.RFC3339), lim.MaxAge)
	}
	if t.After(now.Add(lim.MaxFuture)) {
		return fmt.Sprintf("%s is more than %s in the future (clock skew?)", t.Format(time.RFC3339), lim.MaxFuture)
	}
	return ""
}

// AnnotationMatches says whether a stored annotation says what a retry
// with its Idempotency-Key says: its times too when the retry gives them
// (one without a time is placed at its own now, so its time says
// nothing; one that gives another time is another annotation, which a
// 200 would have dropped silently).
func AnnotationMatches(stored correlate.Event, retry AnnotationIn) bool {
	r := retry.Event
	tags := func(e correlate.Event) string { b, _ := json.Marshal(e.Attrs["tags"]); return string(b) }
	same := stored.Kind == r.Kind && stored.Summary == r.Summary && stored.Scope == r.Scope &&
		stored.Source == r.Source && (stored.EndTime == nil) == (r.EndTime == nil) && tags(stored) == tags(r)
	if !same || !retry.Timed {
		return same
	}
	return stored.Time.Equal(r.Time) && (stored.EndTime == nil || stored.EndTime.Equal(*r.EndTime))
}
