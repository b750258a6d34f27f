package pull

import (
	"context"
	"math"
	"time"

	"github.com/prometheus/common/model"

	"github.com/waterline-dev/waterline/correlate"
)

// adhocAttempts bounds an ad-hoc query's tries: a user waits for them.
const adhocAttempts = 2

// Series is one stream of an ad-hoc query: its labels and points.
type Series struct {
	Labels map[string]string
	Points []correlate.Point
}

// QueryRange runs an ad-hoc PromQL range query (GET /api/v1/spikes?query=)
// against the same Prometheus. Errors are *QueryError: Rejected is true
// when Prometheus refused the expression (a client mistake), false when it
// could not be asked. A failure to ask is tried once more (after about a
// second), as the history pull retries: a connection cut mid-answer
// should not be a user's 502; a rejected expression is not retried.
func (p *Puller) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	var m model.Matrix
	err := retry(ctx, adhocAttempts, func() error {
		var err error
		m, err = p.prom.rangeQuery(ctx, "adhoc", expr, start, end, step)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(m))
	for _, s := range m {
		ser := Series{Labels: make(map[string]string, len(s.Metric)), Points: make([]correlate.Point, 0, len(s.Values))}
		for k, v := range s.Metric {
			ser.Labels[string(k)] = string(v)
		}
		for _, v := range s.Values {
			if f := float64(v.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
				ser.Points = append(ser.Points, correlate.Point{T: int64(v.Timestamp), V: f})
			}
		}
		out = append(out, ser)
	}
	return out, nil
}
