package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// Events decodes and checks every event of b, all or nothing: events
// are few, so they are read whole before anything is stored. lines are
// the events' line numbers in the body, for errors found later.
func Events(b *Body, lim Limits, now time.Time) (events []correlate.Event, lines []int, err error) {
	attrBytes := 0
	for {
		raw, line, err := b.Next()
		if errors.Is(err, io.EOF) {
			return events, lines, nil
		}
		if err != nil {
			return nil, nil, err
		}
		var w wire.EventIn
		if err := DecodeRecord(raw, line, &w); err != nil {
			return nil, nil, err
		}
		// Decoded, attrs take ten times their bytes: a batch's are bounded
		// in total, not only per event.
		if attrBytes += len(w.Attrs); attrBytes > maxBatchAttrs {
			return nil, nil, &request.Error{Status: http.StatusRequestEntityTooLarge, Line: line, Field: "attrs",
				Msg: fmt.Sprintf("the attrs of this request's events pass %d MiB in total here; send fewer events per request", maxBatchAttrs>>20)}
		}
		e, err := checkEvent(&w, line, lim, now)
		if err != nil {
			return nil, nil, err
		}
		events = append(events, e)
		lines = append(lines, line)
	}
}

// maxBatchAttrs bounds the attrs of one request's events, in bytes.
const maxBatchAttrs = 4 << 20

// checkEvent validates one event and gives it its id.
func checkEvent(w *wire.EventIn, line int, lim Limits, now time.Time) (correlate.Event, error) {
	bad := func(field, format string, args ...any) error {
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
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
		if msg := request.CheckText(f.v, request.MaxLabelLen); msg != "" {
			return correlate.Event{}, bad(f.name, "%s", msg)
		}
	}
	if msg := request.CheckText(w.Summary, 4096); msg != "" {
		return correlate.Event{}, bad("summary", "%s", msg)
	}
	t, msg := checkTime(w.Time, lim, now)
	if msg != "" {
		return correlate.Event{}, bad("time", "%s", msg)
	}
	e := correlate.Event{
		ID: w.ID, Kind: kind, Time: t, Source: w.Source, Summary: w.Summary,
		Scope: correlate.Scope{Model: w.Model, Version: w.Version, Tenant: w.Tenant, Replica: w.Replica, Node: w.Node},
	}
	if w.EndTime != "" {
		end, msg := checkTime(w.EndTime, lim, now)
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
		// Numbers as written: a build number or id past 2^53 would come
		// back rounded as a float64 (jsonb keeps them exact).
		dec := json.NewDecoder(bytes.NewReader(w.Attrs))
		dec.UseNumber()
		if err := dec.Decode(&e.Attrs); err != nil {
			return correlate.Event{}, bad("attrs", "want an object")
		}
		if field, msg := attrsProblem(e.Attrs, "attrs"); msg != "" {
			return correlate.Event{}, bad(field, "%s", msg)
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

// attrsProblem finds, depth first, a value of decoded attrs that jsonb
// cannot store: a NUL character, or a number beyond Postgres' numeric
// (131,072 digits before the point, 16,383 after: 1e200000 is valid JSON
// and failed the whole batch with a 500). It returns the value's path
// ("attrs.build.id", "attrs.list[2]") and what is wrong, or "" and "".
func attrsProblem(v any, path string) (string, string) {
	switch x := v.(type) {
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			return path, "must not contain NUL characters"
		}
	case json.Number:
		if intDigits, fracDigits := numberDigits(string(x)); intDigits > 131072 || fracDigits > 16383 {
			return path, fmt.Sprintf("number %.20s… is out of range (at most 131072 digits before the point and 16383 after)", string(x))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same answer for the same body
		for _, k := range keys {
			if strings.IndexByte(k, 0) >= 0 {
				return path, "must not contain NUL characters"
			}
			if f, msg := attrsProblem(x[k], path+"."+k); msg != "" {
				return f, msg
			}
		}
	case []any:
		for i, v := range x {
			if f, msg := attrsProblem(v, fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return f, msg
			}
		}
	}
	return "", ""
}

// numberDigits counts the decimal digits a JSON number has before and
// after the point once its exponent is applied (1.5e3: 4 and 0).
func numberDigits(n string) (intDigits, fracDigits int) {
	n = strings.TrimPrefix(n, "-")
	mant, exp := n, 0
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		mant = n[:i]
		e, err := strconv.Atoi(n[i+1:])
		if err != nil { // beyond int: certainly out of range
			if strings.HasPrefix(n[i+1:], "-") {
				return 0, math.MaxInt32
			}
			return math.MaxInt32, 0
		}
		exp = e
	}
	point := strings.IndexByte(mant, '.')
	digits := len(mant)
	if point < 0 {
		point = digits
	} else {
		digits--
	}
	// Leading zeros of the integer part do not count (0.001e5 is 100).
	lead := 0
	for lead < point && mant[lead] == '0' {
		lead++
	}
	intDigits = point - lead + exp
	fracDigits = digits - point - exp
	return max(intDigits, 0), max(fracDigits, 0)
}
