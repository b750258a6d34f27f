package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// LabeledSeries is one stream of an ad-hoc PromQL query.
type LabeledSeries struct {
	Labels map[string]string
	Points []correlate.Point
}

// QueryRangeFunc runs an ad-hoc PromQL range query. It returns an error
// wrapping ErrBadQuery when Prometheus rejects the expression.
type QueryRangeFunc func(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]LabeledSeries, error)

// ErrBadQuery marks a PromQL expression Prometheus refused (a 400, not a 502).
var ErrBadQuery = errors.New("bad query")

// Spike-query limits, in the spirit of Prometheus' own API.
const (
	maxSpikeWindow = 31 * 24 * time.Hour
	maxPoints      = 11000 // Prometheus' per-series limit
)

// ListSpikes is GET /api/v1/spikes?from=&to=[&query=][&step=]
// [&direction=][&model=…]: spikes whose onset lies in [from, to). Without
// query it judges the stored latency quantiles (P50/P95/P99 per model, or
// per replica with level=replica); with query, the given PromQL evaluated
// by Prometheus at step.
func (a *API) ListSpikes(c echo.Context) error {
	from, to, err := request.Range(c.QueryParams(), time.Time{}, time.Time{}, maxSpikeWindow)
	if err != nil {
		return err
	}
	dir := correlate.Direction(c.QueryParam("direction"))
	switch dir {
	case "":
		dir = correlate.Up
	case correlate.Up, correlate.Down, correlate.Both:
	default:
		return request.BadInput("direction", "want up, down or both, got %q", dir)
	}
	ctx := c.Request().Context()
	var spikes []wire.ListedSpike
	if q := strings.TrimSpace(c.QueryParam("query")); q != "" {
		spikes, err = a.adhocSpikes(ctx, c, q, from, to, dir)
	} else {
		spikes, err = a.storedSpikes(ctx, c, from, to, dir)
	}
	if err != nil {
		return err
	}
	if spikes == nil {
		spikes = []wire.ListedSpike{}
	}
	return c.JSON(http.StatusOK, wire.SpikeList{Spikes: spikes})
}

func (a *API) storedSpikes(ctx context.Context, c echo.Context, from, to time.Time, dir correlate.Direction) ([]wire.ListedSpike, error) {
	q := diagnose.SpikeQuery{From: from, To: to, Direction: dir, Scope: correlate.Scope{
		Model: c.QueryParam("model"), Version: c.QueryParam("version"), Replica: c.QueryParam("replica"), Node: c.QueryParam("node"),
	}}
	switch lv := correlate.Level(c.QueryParam("level")); lv {
	case "", correlate.LevelModel:
	case correlate.LevelVersion, correlate.LevelReplica:
		q.Levels = []correlate.Level{lv}
	default:
		return nil, request.BadInput("level", "want model, version or replica, got %q", lv)
	}
	found, err := diagnose.Spikes(ctx, a.store, q, a.slo)
	if err != nil {
		return nil, err
	}
	out := make([]wire.ListedSpike, len(found))
	for i, sp := range found {
		out[i] = wire.ListedSpike{Spike: sp}
	}
	return out, nil
}

func (a *API) adhocSpikes(ctx context.Context, c echo.Context, q string, from, to time.Time, dir correlate.Direction) ([]wire.ListedSpike, error) {
	if a.queryRange == nil {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "no Prometheus configured (PROMETHEUS_URL): ad-hoc queries are unavailable")
	}
	step, err := request.Duration(c.QueryParams(), "step", 15*time.Second)
	if err != nil {
		return nil, err
	}
	// The trailing baseline needs an hour before from.
	start := from.Add(-time.Hour)
	if n := to.Sub(start) / step; n > maxPoints {
		return nil, request.BadInput("step", "exceeded maximum resolution of %d points per timeseries (%d requested); try decreasing the window or increasing step", maxPoints, n)
	}
	series, err := a.queryRange(ctx, q, start, to, step)
	if errors.Is(err, ErrBadQuery) {
		return nil, request.BadInput("query", "%v", err)
	}
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadGateway, fmt.Sprintf("prometheus: %v", err))
	}
	var out []wire.ListedSpike
	for _, ser := range series {
		for _, sp := range correlate.DetectSpikes(ser.Points, correlate.SpikeOptions{Step: step, Direction: dir}) {
			if sp.Onset.Before(from) || !sp.Onset.Before(to) {
				continue
			}
			sp.Series = labelString(ser.Labels)
			sp.Scope = correlate.Scope{Model: ser.Labels["model"], Version: ser.Labels["version"], Replica: ser.Labels["pod"], Node: ser.Labels["node"]}
			out = append(out, wire.ListedSpike{Spike: sp, Labels: ser.Labels})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Onset.Before(out[j].Onset) })
	return out, nil
}

// labelString renders labels as {a="1", b="2"} in key order.
func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, l[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
