package request

import (
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Time reads a time query parameter as RFC 3339 or Unix seconds (as
// Prometheus' API does). A missing parameter gives def; a malformed one a
// 400 naming the parameter.
func Time(q url.Values, name string, def time.Time) (time.Time, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return time.Time{}, BadInput(name, "cannot parse %q to a valid timestamp (RFC 3339 or Unix seconds)", v)
		}
		if f < 0 || f >= float64(maxTime.Unix()) { // before int64 milliseconds overflow
			return time.Time{}, BadInput(name, "%s lies outside 1970–9999", v)
		}
		t = time.UnixMilli(int64(f * 1000))
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return time.Time{}, BadInput(name, "%s lies outside 1970–9999", v)
	}
	return t.UTC(), nil
}

// Known refuses a query parameter that is not one of names, with a 400
// naming it and the ones there are.
func Known(q url.Values, names ...string) error {
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(names, k) {
			if len(names) == 0 {
				return BadInput(k, "unknown parameter; this endpoint takes no query parameters")
			}
			return BadInput(k, "unknown parameter; this endpoint takes %s", strings.Join(names, ", "))
		}
	}
	return nil
}

// minTime and maxTime bound every time parameter: Postgres holds later
// ones, but JSON answers stop at year 9999, and nothing is stored before
// 1970.
var (
	minTime = time.Unix(0, 0).UTC()
	maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Duration reads a duration parameter ("15s", "1m" or plain seconds).
func Duration(q url.Values, name string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return def, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
		return time.Duration(f * float64(time.Second)), nil
	}
	return 0, BadInput(name, "cannot parse %q as a positive duration such as 15s or 1m", v)
}

// Range reads from/to (both required unless defaults are given) and
// checks that from < to and the span is at most max.
func Range(q url.Values, defFrom, defTo time.Time, max time.Duration) (from, to time.Time, err error) {
	if from, err = Time(q, "from", defFrom); err != nil {
		return
	}
	if to, err = Time(q, "to", defTo); err != nil {
		return
	}
	switch {
	case from.IsZero():
		err = BadInput("from", "required: an RFC 3339 time or Unix seconds")
	case to.IsZero():
		err = BadInput("to", "required: an RFC 3339 time or Unix seconds")
	case !from.Before(to):
		err = BadInput("to", "end timestamp must be after start timestamp (from=%s, to=%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case max > 0 && to.Sub(from) > max:
		err = BadInput("from", "window of %s exceeds the maximum of %s; narrow from/to", to.Sub(from), max)
	}
	return
}

// Limit reads a page size from 1 to max; def when absent.
func Limit(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, BadInput("limit", "want a number from 1 to %d, got %q", max, v)
	}
	return n, nil
}

// ID parses a positive id from a path segment; anything else names
// nothing, so it is a 404.
func ID(v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, &Error{Status: http.StatusNotFound, Msg: "not found"}
	}
	return id, nil
}
