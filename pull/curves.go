package pull

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/waterline-dev/waterline/correlate"
)

// pulledCurve is a curve with the Prometheus labels it came from.
type pulledCurve struct {
	curve  correlate.Curve
	labels map[string]string
}

// curvesFrom maps a query's series onto curves in w: scope from the label
// mapping, replica curves completed from the pod join, NaN and ±Inf
// dropped (histogram_quantile over no requests gives NaN, JSON cannot
// carry it). Series mapping to the same curve are merged, the later
// winning, and counted in dups; series lacking a scope field their level
// needs are skipped and counted in unscoped, those Postgres cannot store
// (storable) in invalid.
func curvesFrom(q Query, m model.Matrix, pods podIndex, aliases map[string]string, w window) (out []pulledCurve, dups, unscoped, invalid int) {
	fromMs, toMs := w.from.UnixMilli(), w.to.UnixMilli()
	byKey := map[string]int{}
	for _, s := range m {
		get := func(label string) string {
			if label == "" {
				return ""
			}
			return string(s.Metric[model.LabelName(label)])
		}
		c := correlate.Curve{Role: q.Role, Level: q.Level, Stage: q.Stage, Scope: correlate.Scope{
			Model: get(q.Labels.Model), Version: get(q.Labels.Version), Tenant: get(q.Labels.Tenant),
			Replica: get(q.Labels.Replica), Node: get(q.Labels.Node),
		}}
		if c.Stage == "" {
			c.Stage = get(q.Labels.Stage)
		}
		if c.Level == correlate.LevelReplica {
			// Replica curves must say which model, version and node they
			// belong to; exporters such as DCGM only know the pod.
			if meta, ok := pods.lookup(seriesNamespace(s.Metric), c.Scope.Replica); ok {
				if c.Scope.Model == "" {
					c.Scope.Model = meta.Model
				}
				if c.Scope.Version == "" {
					c.Scope.Version = meta.Version
				}
				// The pod's node from kube-state-metrics over the series' own:
				// DCGM's Hostname is the exporter pod's name unless it runs
				// with NODE_NAME or on the host network.
				if meta.Node != "" {
					c.Scope.Node = meta.Node
				}
			}
		}
		if a, ok := aliases[c.Scope.Model]; ok {
			c.Scope.Model = a
		}
		if !hasScope(c) {
			unscoped++
			continue
		}
		if !storable(c, s.Metric) {
			invalid++
			continue
		}
		pts := make([]correlate.Point, 0, len(s.Values))
		for _, v := range s.Values {
			t, f := int64(v.Timestamp), float64(v.Value)
			if t < fromMs || t >= toMs || math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			pts = append(pts, correlate.Point{T: t, V: f})
		}
		if len(pts) == 0 {
			continue
		}
		c.Points = pts
		labels := make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			labels[string(k)] = string(v)
		}
		if i, dup := byKey[c.Key()]; dup {
			dups++
			out[i] = pulledCurve{curve: mergePoints(out[i].curve, c), labels: labels}
			continue
		}
		byKey[c.Key()] = len(out)
		out = append(out, pulledCurve{curve: c, labels: labels})
	}
	return out, dups, unscoped, invalid
}

// maxCurveKey bounds a curve's key: Postgres' unique index on it takes
// entries of up to ~2.7 kB, and one longer key failed the whole chunk —
// every round, for every series of the query.
const maxCurveKey = 2048

// storable reports whether Postgres can store the curve and its labels:
// a key within maxCurveKey, and labels without NUL bytes or invalid UTF-8
// (which text and jsonb refuse).
func storable(c correlate.Curve, m model.Metric) bool {
	if len(c.Key()) > maxCurveKey {
		return false
	}
	for k, v := range m {
		if strings.ContainsRune(string(k)+string(v), 0) || !utf8.ValidString(string(v)) {
			return false
		}
	}
	return true
}

// seriesNamespace is the namespace of the workload a series describes:
// exported_namespace where the scrape's own namespace took its place (a
// ServiceMonitor without honorLabels), else namespace.
func seriesNamespace(m model.Metric) string {
	if ns := m["exported_namespace"]; ns != "" {
		return string(ns)
	}
	return string(m["namespace"])
}

// hasScope reports whether c carries the scope fields its level needs.
func hasScope(c correlate.Curve) bool {
	s := c.Scope
	switch c.Level {
	case correlate.LevelModel:
		return s.Model != ""
	case correlate.LevelVersion:
		return s.Model != "" && s.Version != ""
	case correlate.LevelReplica:
		return s.Replica != ""
	case correlate.LevelNode:
		return s.Node != ""
	}
	return true
}

// mergePoints joins b's points into a's, b winning at equal times; both
// are sorted and so is the result.
func mergePoints(a, b correlate.Curve) correlate.Curve {
	out := make([]correlate.Point, 0, len(a.Points)+len(b.Points))
	i, j := 0, 0
	for i < len(a.Points) || j < len(b.Points) {
		switch {
		case j == len(b.Points) || (i < len(a.Points) && a.Points[i].T < b.Points[j].T):
			out = append(out, a.Points[i])
			i++
		case i == len(a.Points) || b.Points[j].T < a.Points[i].T:
			out = append(out, b.Points[j])
			j++
		default:
			out = append(out, b.Points[j])
			i, j = i+1, j+1
		}
	}
	a.Points = out
	return a
}
