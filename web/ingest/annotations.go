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
	"strconv"
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
	w, err := decodeAnnotation(req, lim)
	if err != nil {
		return correlate.Event{}, 0, false, err
	}
	bad := func(field, format string, args ...any) error {
		return &request.Error{Status: http.StatusUnprocessableEntity, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	e := correlate.Event{Kind: correlate.KindAnnotation, Summary: w.Text}
	if msg := request.CheckText(w.Text, 4096); msg != "" {
		return correlate.Event{}, 0, false, bad("text", "%s", msg)
	}
	if err := scopeFromTags(&e, w.Tags); err != nil {
		return correlate.Event{}, 0, false, err
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
	if msg := msWindow(t, lim, now); msg != "" {
		return correlate.Event{}, 0, false, bad("time", "%s", msg)
	}
	e.Time = t
	idEnd := ""
	if w.TimeEnd != nil && *w.TimeEnd != 0 && !time.UnixMilli(*w.TimeEnd).Equal(t) {
		end, id := at(w.TimeEnd)
		if msg := msWindow(end, lim, now); msg != "" {
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

// decodeAnnotation reads an annotation body: JSON whatever its
// Content-Type, as Grafana's binding does (`curl -d` sends form encoding).
func decodeAnnotation(req *http.Request, lim Limits) (wire.Annotation, error) {
	var w wire.Annotation
	raw, err := io.ReadAll(&limitReader{r: req.Body, max: min(lim.MaxBytes, maxAnnotationBytes)})
	if err != nil {
		if err == errTooLarge {
			return w, &request.Error{Status: http.StatusRequestEntityTooLarge,
				Msg: fmt.Sprintf("annotation larger than %d bytes", min(lim.MaxBytes, maxAnnotationBytes))}
		}
		return w, ReadFailed(err, "reading the body")
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		// Unknown fields are ignored, as Grafana does: a tool's body made
		// for a newer Grafana still lands.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return w, &request.Error{Status: http.StatusUnprocessableEntity, Field: te.Field,
				Msg: fmt.Sprintf("want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)}
		}
		return w, &request.Error{Status: http.StatusBadRequest, Msg: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	return w, nil
}

// scopeFromTags sets e's kind, scope and source from its tags (see
// Annotation), keeping them in attrs.tags.
func scopeFromTags(e *correlate.Event, tags []string) error {
	bad := func(field, format string, args ...any) error {
		return &request.Error{Status: http.StatusUnprocessableEntity, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(tags) > 64 {
		return bad("tags", "at most 64 tags, got %d", len(tags))
	}
	kindSet := false
	for i, tag := range tags {
		field := fmt.Sprintf("tags[%d]", i)
		if msg := request.CheckText(tag, request.MaxLabelLen); msg != "" {
			return bad(field, "%s", msg)
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
				return bad(field, "unknown kind %q", val)
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
			return bad(field, "a second %s (%q, already %q): an event has one scope", key, val, *dst)
		}
		*dst = val
	}
	if e.Source == "" {
		e.Source = "annotation"
	}
	if len(tags) > 0 {
		e.Attrs = map[string]any{"tags": tags}
	}
	return nil
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

// msWindow is inWindow for a time given in Unix milliseconds: one that
// reads as a date in early 1970 was most likely sent in seconds (a shell's
// date +%s), and the message says so.
func msWindow(t time.Time, lim Limits, now time.Time) string {
	msg := inWindow(t, lim, now)
	if msg != "" && t.Before(time.Unix(0, 0).AddDate(0, 2, 0)) && t.UnixMilli() > 0 {
		msg += fmt.Sprintf("; sent in seconds? time and timeEnd are Unix milliseconds (%d s is %s)",
			t.UnixMilli(), time.Unix(t.UnixMilli(), 0).UTC().Format(time.RFC3339))
	}
	return msg
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

// AnnotationIDPrefix is the start of the event id an annotation's number
// (the id POST /api/annotations answered) was derived from: the number
// is the first 52 bits of the id's hash, 13 hex digits.
func AnnotationIDPrefix(number string) (string, error) {
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil || n < 0 || n >= 1<<52 {
		return "", &request.Error{Status: http.StatusNotFound, Field: "id", Msg: fmt.Sprintf("no annotation %q: want the id its POST answered", number)}
	}
	return fmt.Sprintf("annotation:%013x", n), nil
}

// PatchAnnotation applies a Grafana PATCH /api/annotations/{id} body to
// the stored annotation, as Grafana does: only what the body gives
// changes — time and timeEnd when not 0 (a CD step that annotated the
// start of a deploy sets its end), text when not empty, tags (kind,
// scope and source with them) when present. The event keeps its id.
func PatchAnnotation(req *http.Request, stored correlate.Event, lim Limits, now time.Time) (correlate.Event, error) {
	w, err := decodeAnnotation(req, lim)
	if err != nil {
		return correlate.Event{}, err
	}
	e := stored
	if w.Text != "" {
		if msg := request.CheckText(w.Text, 4096); msg != "" {
			return correlate.Event{}, &request.Error{Status: http.StatusUnprocessableEntity, Field: "text", Msg: msg}
		}
		e.Summary = w.Text
	}
	if w.Tags != nil {
		e.Kind, e.Scope, e.Source, e.Attrs = correlate.KindAnnotation, correlate.Scope{}, "", nil
		if err := scopeFromTags(&e, w.Tags); err != nil {
			return correlate.Event{}, err
		}
	}
	for _, t := range []struct {
		field string
		ms    *int64
		dst   func(time.Time)
	}{
		{"time", w.Time, func(t time.Time) { e.Time = t }},
		{"timeEnd", w.TimeEnd, func(t time.Time) { e.EndTime = &t }},
	} {
		if t.ms == nil || *t.ms == 0 {
			continue
		}
		at := time.UnixMilli(*t.ms).UTC()
		if msg := msWindow(at, lim, now); msg != "" {
			return correlate.Event{}, &request.Error{Status: http.StatusUnprocessableEntity, Field: t.field, Msg: msg}
		}
		t.dst(at)
	}
	if e.EndTime != nil {
		switch {
		case e.EndTime.Equal(e.Time):
			e.EndTime = nil // a point, as Grafana stores one
		case e.EndTime.Before(e.Time):
			end := e.Time
			e.Time, e.EndTime = *e.EndTime, &end
		}
	}
	return e, nil
}
