package web

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// queryTime reads a time query parameter as RFC 3339 or Unix seconds (as
// Prometheus' API does). A missing parameter gives def; a malformed one a
// 400 naming the parameter.
func queryTime(c echo.Context, name string, def time.Time) (time.Time, error) {
	v := strings.TrimSpace(c.QueryParam(name))
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return time.UnixMilli(int64(f * 1000)).UTC(), nil
	}
	return time.Time{}, badInput(name, "cannot parse %q to a valid timestamp (RFC 3339 or Unix seconds)", v)
}

// queryDuration reads a duration parameter ("15s", "1m" or plain seconds).
func queryDuration(c echo.Context, name string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(c.QueryParam(name))
	if v == "" {
		return def, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
		return time.Duration(f * float64(time.Second)), nil
	}
	return 0, badInput(name, "cannot parse %q as a positive duration such as 15s or 1m", v)
}

// queryRange reads from/to (both required unless defaults are given) and
// checks that from < to and the span is at most max.
func queryRange(c echo.Context, defFrom, defTo time.Time, max time.Duration) (from, to time.Time, err error) {
	if from, err = queryTime(c, "from", defFrom); err != nil {
		return
	}
	if to, err = queryTime(c, "to", defTo); err != nil {
		return
	}
	switch {
	case from.IsZero():
		err = badInput("from", "required: an RFC 3339 time or Unix seconds")
	case to.IsZero():
		err = badInput("to", "required: an RFC 3339 time or Unix seconds")
	case !from.Before(to):
		err = badInput("to", "end timestamp must be after start timestamp (from=%s, to=%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case max > 0 && to.Sub(from) > max:
		err = badInput("from", "window of %s exceeds the maximum of %s; narrow from/to", to.Sub(from), max)
	}
	return
}
