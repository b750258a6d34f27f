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
	"github.com/waterline-dev/waterline/store"
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
	sens, ok := correlate.ParseSensitivity(c.QueryParam("sensitivity"))
	if !ok {
		return request.BadInput("sensitivity", "want low, medium or high, got %q", c.QueryParam("sensitivity"))
	}
	ctx := c.Request().Context()
	// step is the resolution of an ad-hoc query; stored curves keep the
	// pull's own. A bad value is refused either way, not ignored.
	step, err := request.Duration(c.QueryParams(), "step", 15*time.Second)
	if err != nil {
		return err
	}
	if step <= 0 {
		return request.BadInput("step", "want a positive duration, got %s", step)
	}
	var spikes []wire.ListedSpike
	if q := strings.TrimSpace(c.QueryParam("query")); q != "" {
		// The stored curves' filters mean nothing to the client's PromQL:
		// ignored, model=vision-xl answered chat-7b's spike.
		for _, p := range []string{"model", "version", "replica", "node", "level"} {
			if c.QueryParam(p) != "" {
				return request.BadInput(p, "applies to stored curves, not to query=: select the series in the PromQL ({%s=\"…\"})", p)
			}
		}
		spikes, err = a.adhocSpikes(ctx, q, from, to, step, dir, sens)
	} else {
		spikes, err = a.storedSpikes(ctx, c, from, to, dir, sens)
	}
	if err != nil {
		return err
	}
	if spikes == nil {
		spikes = []wire.ListedSpike{}
	}
	return c.JSON(http.StatusOK, wire.SpikeList{Spikes: spikes})
}

func (a *API) storedSpikes(ctx context.Context, c echo.Context, from, to time.Time, dir correlate.Direction, sens correlate.Sensitivity) ([]wire.ListedSpike, error) {
	q := diagnose.SpikeQuery{From: from, To: to, Direction: dir, Sensitivity: sens, Scope: correlate.Scope{
		Model: c.QueryParam("model"), Version: c.QueryParam("version"), Replica: c.QueryParam("replica"), Node: c.QueryParam("node"),
	}}
	lv := correlate.Level(c.QueryParam("level"))
	if lv == "" {
		// The level whose curves carry the filter: model-level curves have
		// no version, replica or node, and version= at the default level
		// answered "no spikes" for a version that had one.
		switch {
		case q.Scope.Replica != "" || q.Scope.Node != "":
			lv = correlate.LevelReplica
		case q.Scope.Version != "":
			lv = correlate.LevelVersion
		}
	}
	switch lv {
	case "", correlate.LevelModel:
		for _, f := range []struct{ name, v string }{{"version", q.Scope.Version}, {"replica", q.Scope.Replica}, {"node", q.Scope.Node}} {
			if f.v != "" {
				return nil, request.BadInput(f.name, "model-level curves carry no %s: leave level out or use level=version or replica", f.name)
			}
		}
	case correlate.LevelVersion:
		if q.Scope.Replica != "" || q.Scope.Node != "" {
			return nil, request.BadInput("level", "version-level curves carry no replica or node: use level=replica")
		}
		q.Levels = []correlate.Level{lv}
	case correlate.LevelReplica:
		q.Levels = []correlate.Level{lv}
	default:
		return nil, request.BadInput("level", "want model, version or replica, got %q", lv)
	}
	if err := a.boundSpikeRead(ctx, from, to, q.Levels, q.Scope, "level"); err != nil {
		return nil, err
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

// boundSpikeRead refuses a spike search over stored curves before anything
// is read when it would read too much, as the timeline's curves are
// bounded: the latency curves (counted, not loaded) × the points of the
// window and the history their baselines need, at the pull's 15 s. A
// month of every replica's quantiles was gigabytes, and so was a month of
// a few hundred models' (levels nil: model level). field names the
// parameter the 400 points at.
func (a *API) boundSpikeRead(ctx context.Context, from, to time.Time, levels []correlate.Level, scope correlate.Scope, field string) error {
	if len(levels) == 0 {
		levels = []correlate.Level{correlate.LevelModel}
	}
	series, err := a.store.CurveSeries(ctx, store.CurveFilter{From: from, To: to, Levels: levels, Scope: scope,
		Roles: []correlate.Role{correlate.RoleLatencyP99, correlate.RoleLatencyP95, correlate.RoleLatencyP50, correlate.RoleLatencyMean}})
	if err != nil {
		return err
	}
	history := correlate.SpikeOptions{Step: 15 * time.Second}.History()
	if steps := int((to.Sub(from) + history) / (15 * time.Second)); len(series)*steps > maxStoredSpikePoints {
		how := "filter them (model=, replica=)"
		if to.Sub(from) > history { // the window, not the history, is most of it
			how += " or shorten the window"
		}
		return request.BadInput(field, "%d latency curves over %s (and the %s of history their baselines need) are over %d points at 15 s: %s",
			len(series), to.Sub(from), history, maxStoredSpikePoints, how)
	}
	return nil
}

func (a *API) adhocSpikes(ctx context.Context, q string, from, to time.Time, step time.Duration, dir correlate.Direction, sens correlate.Sensitivity) ([]wire.ListedSpike, error) {
	if a.queryRange == nil {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "no Prometheus configured (PROMETHEUS_URL): ad-hoc queries are unavailable")
	}
	opt := correlate.SpikeOptions{Step: step, Direction: dir, Sensitivity: sens}
	// The baseline needs history before from: its window, the days a
	// seasonal baseline compares with, the tail's memory.
	start := from.Add(-opt.History())
	if n := to.Sub(start) / step; n > maxSpikeQueries*maxPoints {
		return nil, request.BadInput("step", "the window and the history its baseline needs take %d points per series, more than %d; increase step", n, maxSpikeQueries*maxPoints)
	}
	series, err := a.queryRangeSplit(ctx, q, start, to, step)
	if errors.Is(err, ErrBadQuery) || errors.Is(err, ErrTooManySeries) {
		return nil, request.BadInput("query", "%v", err)
	}
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadGateway, fmt.Sprintf("prometheus: %v", err))
	}
	// A histogram_quantile expression is a latency quantile whose peak
	// may be its histogram's top finite bucket (correlate.QuantileCeiling).
	quantile := strings.Contains(q, "histogram_quantile")
	var out []wire.ListedSpike
	for _, ser := range series {
		for _, sp := range correlate.DetectSpikes(ser.Points, opt) {
			if sp.Onset.Before(from) || !sp.Onset.Before(to) {
				continue
			}
			if quantile {
				correlate.MarkCeiling(&sp, ser.Points)
			}
			sp.Series = labelString(ser.Labels)
			sp.Scope = correlate.Scope{Model: ser.Labels["model"], Version: ser.Labels["version"], Replica: ser.Labels["pod"], Node: ser.Labels["node"]}
			out = append(out, wire.ListedSpike{Spike: sp, Labels: ser.Labels})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Onset.Before(out[j].Onset) })
	return out, nil
}

// maxStoredSpikePoints bounds the stored points one spikes request reads
// (about 320 MB).
const maxStoredSpikePoints = 20_000_000

// maxSpikeQueries bounds the Prometheus queries one spike request makes.
const maxSpikeQueries = 12

// maxAdhocSeries bounds the series an ad-hoc query may bring: the
// expression is the client's, and {__name__=~".+"} would be every series
// Prometheus has, joined in memory and scanned by the detector. (One
// answer is bounded by Prometheus itself: --query.max-samples.)
const maxAdhocSeries = 1000

// ErrTooManySeries is an ad-hoc query that returns more than
// maxAdhocSeries series: the client's to narrow.
var ErrTooManySeries = errors.New("query too broad")

// queryRangeSplit runs a range query in pieces of at most maxPoints steps
// (Prometheus refuses more in one answer) and joins each series' points.
func (a *API) queryRangeSplit(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]LabeledSeries, error) {
	byKey := map[string]*LabeledSeries{}
	var order []string
	for lo := start; !lo.After(end); {
		hi := lo.Add(time.Duration(maxPoints-1) * step)
		if hi.After(end) {
			hi = end
		}
		part, err := a.queryRange(ctx, q, lo, hi, step)
		if err != nil {
			return nil, err
		}
		for _, s := range part {
			k := labelString(s.Labels)
			if byKey[k] == nil {
				if len(order) == maxAdhocSeries {
					return nil, fmt.Errorf("%w: it returns more than %d series; narrow it (a label matcher, sum by …)", ErrTooManySeries, maxAdhocSeries)
				}
				byKey[k] = &LabeledSeries{Labels: s.Labels}
				order = append(order, k)
			}
			byKey[k].Points = append(byKey[k].Points, s.Points...)
		}
		lo = hi.Add(step)
	}
	out := make([]LabeledSeries, len(order))
	for i, k := range order {
		out[i] = *byKey[k]
	}
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
