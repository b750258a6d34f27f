package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

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
	// warned is told the warnings of an answer that is whole all the same
	// (see missingData); nil: dropped.
	warned func(source string, warnings []string)
}

func newProm(b Backend) (*prom, error) {
	rt, err := b.transport()
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(api.Config{Address: b.URL, RoundTripper: noPartial{boundedAnswers{rt}}})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", redactURL(b.URL), err)
	}
	return &prom{api: v1.NewAPI(c), timeout: 2 * time.Minute}, nil
}

// noPartial asks every query for a whole answer or an error: Thanos
// (partial_response=false) and VictoriaMetrics' cluster
// (deny_partial_response=1) otherwise answer with what the stores that
// are up hold, a warning beside, which a pull would store as complete —
// the cursor moved on, the hole never refilled, and a quantile over half
// the fleet can fake a spike or a recovery. A failed chunk is recorded as
// a gap and asked again. Prometheus ignores both; an answer with a warning
// of missing data (its failed remote read, or a backend that answers in
// part regardless) fails as an error does (see checkWarnings).
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

// maxAnswerBytes bounds one answer of Prometheus (after decompression):
// client_golang reads a body whole into memory, so a runaway query or a
// broken proxy streaming without end took all of it. A pull's chunk holds
// at most maxPointsPerSeries points per series; a catch-up over many
// series past the bound fails as too big and is asked again in halves.
const maxAnswerBytes = 64 << 20

// boundedAnswers fails the read of a body past maxAnswerBytes.
type boundedAnswers struct{ next http.RoundTripper }

func (b boundedAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err == nil {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxAnswerBytes}
	}
	return resp, err
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more is past the bound; the end is not.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, errAnswerTooBig
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// errAnswerTooBig is an answer past maxAnswerBytes: too much at once, as
// Prometheus' own "too many samples" (classify: failBig).
var errAnswerTooBig = fmt.Errorf("answer larger than %d MiB: asking for less at once", maxAnswerBytes>>20)

// QueryError is a failed query: which source, which expression, and why.
// Rejected is true when Prometheus refused the query itself (bad PromQL,
// too many points), false when it could not be asked or failed to answer.
// Another backend's refusal counts when its message says so (see classify).
type QueryError struct {
	Source   string
	Expr     string
	Rejected bool
	// TooBig: refused as it ran for asking too much at once (samples,
	// series, points, time) — Prometheus' execution error, another
	// backend's limits, a query timeout. A shorter range or a narrower
	// selector may pass.
	TooBig bool
	Err    error
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
	f := classify(err)
	if errors.As(err, &ae) {
		if d := strings.TrimSpace(ae.Detail); d != "" {
			err = fmt.Errorf("%w (%s)", err, clip(d, 300))
		}
		// An auth proxy's or Mimir's refusal (no token, an expired one,
		// no tenant) is not the query's fault: say what it is.
		if ae.Type == v1.ErrClient && (strings.HasSuffix(ae.Msg, " 401") || strings.HasSuffix(ae.Msg, " 403")) {
			err = fmt.Errorf("%w: Prometheus, or a gateway in front of it, refused the request's credentials (see the README's \"Prometheus behind a gateway\")", err)
		}
	}
	return &QueryError{Source: source, Expr: expr, Rejected: f == failRejected, TooBig: f == failBig, Err: err}
}

// failure is what a failed query's answer says about asking again.
type failure int

const (
	failOther    failure = iota // not asked, or failed: the same again later
	failRejected                // the expression itself: asking again cannot help
	failBig                     // too much at once (samples, series, time): a shorter range may pass
	failServer                  // a 5xx: a shorter range may cure it as well as not
)

// promErrorTypes are the error types Prometheus answers with (those
// client_golang names, and the server's not_found, unavailable and
// internal). Other backends pass their own through: VictoriaMetrics
// answers every error with HTTP 422 and errorType "422", whatever the
// cause.
var promErrorTypes = map[v1.ErrorType]bool{
	v1.ErrBadData: true, v1.ErrTimeout: true, v1.ErrCanceled: true, v1.ErrExec: true,
	v1.ErrBadResponse: true, v1.ErrServer: true, v1.ErrClient: true,
	"not_found": true, "unavailable": true, "internal": true,
}

// classify reads a failed query's error: by its type when Prometheus
// named one of its own, else by its message.
func classify(err error) failure {
	if errors.Is(err, errAnswerTooBig) {
		return failBig
	}
	var ae *v1.Error
	if !errors.As(err, &ae) {
		return failOther
	}
	switch ae.Type {
	case v1.ErrBadData:
		return failRejected
	case v1.ErrExec, v1.ErrTimeout:
		return failBig
	case v1.ErrServer:
		// Prometheus answers its own query timeout with 503 and
		// errorType "timeout", which client_golang reads as any 5xx.
		if timedOut(ae.Detail) {
			return failBig
		}
		return failServer
	}
	if promErrorTypes[ae.Type] {
		return failOther
	}
	if f := byMessage(ae.Msg); f != failOther {
		return f
	}
	if ae.Type == "400" { // VictoriaMetrics' bad request: our arguments
		return failRejected
	}
	return failOther
}

// timedOut says whether a 5xx answer's body is Prometheus' query
// timeout ("query timed out in query execution", "… in expression
// evaluation"). Another 5xx — a proxy, a server starting, VictoriaMetrics
// too busy to start the query — may have nothing to do with the range.
func timedOut(body string) bool {
	var b struct {
		Type v1.ErrorType `json:"errorType"`
		Err  string       `json:"error"`
	}
	if json.Unmarshal([]byte(body), &b) != nil {
		return strings.Contains(body, "query timed out")
	}
	return b.Type == v1.ErrTimeout || strings.Contains(b.Err, "query timed out")
}

// byMessage reads the cause of an error from its words (VictoriaMetrics'
// own, e.g. "argList: unexpected token", "unknown func", "cannot select
// more than -search.maxSamplesPerQuery", "the number of matching
// timeseries exceeds", "too many points ... -search.maxPointsPerTimeseries",
// "timeout exceeded"). Words in quotes are left out: the query, its
// selectors and label values are quoted in the message and are not the
// cause.
func byMessage(msg string) failure {
	m := strings.ToLower(outsideQuotes(msg))
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(m, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("parse error", "cannot parse", "syntax error", "unexpected token", "unparsed data", "unknown func"):
		return failRejected
	case has("too many samples", "maxsamplesperquery", "too many series", "timeseries exceeds",
		"too many points", "maxpointspertimeseries", "not enough memory", "timeout", "timed out"):
		return failBig
	}
	return failOther
}

// outsideQuotes is s without its double-quoted parts (Go quoting).
func outsideQuotes(s string) string {
	var b strings.Builder
	in, esc := false, false
	for _, r := range s {
		switch {
		case esc:
			esc = false
		case in && r == '\\':
			esc = true
		case r == '"':
			in = !in
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// incompleteError is an answer whose warnings say data is missing from
// it: a failed chunk, asked again later, never stored as complete.
type incompleteError struct{ Warnings []string }

func (e *incompleteError) Error() string {
	return "incomplete answer: " + strings.Join(e.Warnings, "; ")
}

// checkWarnings fails an answer with a warning of missing data (a
// *QueryError wrapping an *incompleteError, not Rejected: asking again
// may succeed) and tells p.warned the other warnings.
func (p *prom) checkWarnings(source, expr string, warnings v1.Warnings) error {
	var missing, other []string
	for _, w := range warnings {
		if missingData(w) {
			missing = append(missing, w)
		} else {
			other = append(other, w)
		}
	}
	if len(missing) > 0 {
		return &QueryError{Source: source, Expr: expr, Err: &incompleteError{Warnings: missing}}
	}
	if len(other) > 0 && p.warned != nil {
		p.warned(source, other)
	}
	return nil
}

// missingData says whether a warning says the answer lacks data: a remote
// read that failed (Prometheus over a long-term storage answers 200 with
// the data it has), a partial response, a store that did not answer or
// is unavailable (Thanos, Mimir). PromQL's annotations ("PromQL info:
// …", "PromQL warning: …") are about the query over data that is there,
// whatever metric names they quote.
func missingData(warning string) bool {
	if strings.HasPrefix(warning, "PromQL info:") || strings.HasPrefix(warning, "PromQL warning:") {
		return false
	}
	w := strings.ToLower(warning)
	for _, s := range []string{"remote_read", "remote read", "remote storage", "partial", "store", "unavailable", "incomplete"} {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// rangeQuery evaluates expr at every step in [start, end] (both inclusive).
func (p *prom) rangeQuery(ctx context.Context, source, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	v, warnings, _, err := p.api.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, queryErr(source, expr, err)
	}
	if err := p.checkWarnings(source, expr, warnings); err != nil {
		return nil, err
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
	v, warnings, _, err := p.api.Query(ctx, expr, t)
	if err != nil {
		return nil, queryErr(source, expr, err)
	}
	if err := p.checkWarnings(source, expr, warnings); err != nil {
		return nil, err
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

func (c *Config) Validate(ctx context.Context, b Backend, at time.Time) error {
	p, err := newProm(b)
	if err != nil {
		return err
	}
	for _, q := range c.Queries {
		if _, err := p.instant(ctx, q.Name, q.Expr, at); err != nil {
			var qe *QueryError
			if errors.As(err, &qe) && qe.Rejected {
				return fmt.Errorf("%s: %w", q.Origin, err)
			}
			return fmt.Errorf("cannot validate queries against %s: %w", redactURL(b.URL), err)
		}
	}
	return nil
}

// clip shortens s to n bytes at most, on a rune boundary, marking the cut:
// a proxy's error page is not a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
