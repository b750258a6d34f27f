package pull

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// maxPointsPerSeries stays under Prometheus' limit of 11,000 points per
// series in one range query, with room for an inclusive end.
const maxPointsPerSeries = 10000

// prom is the Prometheus HTTP API, with errors that name the query.
type prom struct {
	api     v1.API
	timeout time.Duration
}

func newProm(url string, rt http.RoundTripper, compress bool) (*prom, error) {
	if rt == nil {
		rt = &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute, DisableCompression: !compress}
	}
	c, err := api.NewClient(api.Config{Address: url, RoundTripper: noPartial{rt}})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", url, err)
	}
	return &prom{api: v1.NewAPI(c), timeout: 2 * time.Minute}, nil
}

// noPartial asks every query for a whole answer or an error: Thanos
// (partial_response=false) and VictoriaMetrics' cluster
// (deny_partial_response=1) otherwise answer with what the stores that
// are up hold, a warning beside, which a pull would store as complete —
// the cursor moved on, the hole never refilled, and a quantile over half
// the fleet can fake a spike or a recovery. A failed chunk is recorded as
// a gap and asked again. Prometheus ignores both.
type noPartial struct{ next http.RoundTripper }

func (n noPartial) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/query") || strings.HasSuffix(r.URL.Path, "/query_range") {
		r = r.Clone(r.Context())
		q := r.URL.Query()
		q.Set("partial_response", "false")
		q.Set("deny_partial_response", "1")
		r.URL.RawQuery = q.Encode()
	}
	return n.next.RoundTrip(r)
}

// QueryError is a failed query: which source, which expression, and why.
// Rejected is true when Prometheus refused the query itself (bad PromQL,
// too many points), false when it could not be asked or failed to answer.
type QueryError struct {
	Source   string
	Expr     string
	Rejected bool
	Err      error
}

func (e *QueryError) Error() string {
	if e.Rejected {
		return fmt.Sprintf("query %q: Prometheus rejected %s: %v", e.Source, e.Expr, e.Err)
	}
	return fmt.Sprintf("query %q: %v", e.Source, e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

func queryErr(source, expr string, err error) error {
	var ae *v1.Error
	rejected := errors.As(err, &ae) && ae.Type == v1.ErrBadData
	if ae != nil && ae.Detail != "" {
		err = fmt.Errorf("%w (%s)", err, ae.Detail)
	}
	return &QueryError{Source: source, Expr: expr, Rejected: rejected, Err: err}
}

// rangeQuery evaluates expr at every step in [start, end] (both inclusive).
func (p *prom) rangeQuery(ctx context.Context, source, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	v, _, _, err := p.api.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, queryErr(source, expr, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, &QueryError{Source: source, Expr: expr, Rejected: true, Err: fmt.Errorf("result is a %s, want a range vector", v.Type())}
	}
	return m, nil
}

// instant evaluates expr at t.
func (p *prom) instant(ctx context.Context, source, expr string, t time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, expr, t)
	if err != nil {
		return nil, queryErr(source, expr, err)
	}
	switch v := v.(type) {
	case model.Vector:
		return v, nil
	case *model.Scalar:
		return model.Vector{{Metric: model.Metric{}, Value: v.Value, Timestamp: v.Timestamp}}, nil
	}
	return nil, &QueryError{Source: source, Expr: expr, Rejected: true, Err: fmt.Errorf("result is a %s, want an instant vector", v.Type())}
}

// Validate asks Prometheus to evaluate every query once (an instant query
// at at). It returns the first query Prometheus rejects, naming it and its
// origin in the config. A Prometheus that cannot be reached is reported
// as such (the caller may go on: the pull loop retries).
// redactURL is a URL for messages: its password hidden.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

func (c *Config) Validate(ctx context.Context, prometheusURL string, at time.Time) error {
	p, err := newProm(prometheusURL, nil, false)
	if err != nil {
		return err
	}
	for _, q := range c.Queries {
		if _, err := p.instant(ctx, q.Name, q.Expr, at); err != nil {
			var qe *QueryError
			if errors.As(err, &qe) && qe.Rejected {
				return fmt.Errorf("%s: %w", q.Origin, err)
			}
			return fmt.Errorf("cannot validate queries against %s: %w", redactURL(prometheusURL), err)
		}
	}
	return nil
}
