package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
)

// ExportTraces is POST /v1/traces, the OTLP/HTTP trace receiver: the spans
// go into the assembler, which turns each trace into a request sample
// once it is complete (otlp.Assembler). The answer is OTLP's: an
// ExportTraceServiceResponse (with partial_success naming rejected spans
// and why), or a google.rpc.Status with the error, in the request's
// encoding.
func (a *API) ExportTraces(c echo.Context) error {
	enc := ingest.TraceEncoding(c.Request())
	req, n, err := ingest.Traces(c.Request(), a.cfg.Ingest)
	a.metrics.ingestBytes.WithLabelValues("traces").Add(float64(n))
	if err != nil {
		_ = a.ingestFailed(c, "traces", err)
		var re *request.Error
		if errors.As(err, &re) {
			status, retry := ingest.OTLPStatus(re.Status)
			if retry {
				c.Response().Header().Set("Retry-After", "1")
			}
			return otlpStatus(c, status, re.Msg, enc)
		}
		return err
	}
	res, err := a.traces.Add(req)
	if errors.Is(err, otlp.ErrBusy) {
		a.metrics.ingestErrors.WithLabelValues("traces", "busy").Inc()
		c.Response().Header().Set("Retry-After", "5")
		return otlpStatus(c, http.StatusServiceUnavailable, err.Error(), enc)
	}
	if err != nil {
		return err
	}
	body, err := otlp.EncodeResponse(res.Rejected, res.Message, enc)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, otlp.ContentType(enc), body)
}

// otlpStatus answers a failed export the way OTLP/HTTP clients read it.
// The rest of a rejected body is drained (ingestFailed) so the client
// sees the answer rather than a reset connection.
func otlpStatus(c echo.Context, status int, msg string, enc otlp.Encoding) error {
	if status != http.StatusRequestEntityTooLarge {
		_, _ = io.Copy(io.Discard, io.LimitReader(c.Request().Body, maxDrain))
	}
	return c.Blob(status, otlp.ContentType(enc), otlp.EncodeStatus(status, msg, enc))
}

// traceCollector exports the assembler's counters on /metrics.
type traceCollector struct {
	a                                  *otlp.Assembler
	spans, dropped, samples, sinkErrs  *prometheus.Desc
	cutShort                           *prometheus.Desc
	heldTraces, heldSpans, pendingDesc *prometheus.Desc
}

func newTraceCollector(a *otlp.Assembler) *traceCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &traceCollector{
		a:           a,
		spans:       d("waterline_otlp_spans_total", "OTLP spans received by outcome (accepted; rejected: invalid, reported in partial_success, or past max_spans_per_trace; duplicate: already held; late: their trace was already emitted).", "outcome"),
		dropped:     d("waterline_otlp_traces_dropped_total", "Traces that mapped to no sample, by reason (no_entry_span, no_model, evicted, out_of_window, implausible).", "reason"),
		samples:     d("waterline_otlp_samples_total", "Samples assembled from traces and stored."),
		cutShort:    d("waterline_otlp_traces_cut_short_total", "Traces turned into samples before their grace ended, to keep the buffer within max_spans (spans still on their way are then late)."),
		sinkErrs:    d("waterline_otlp_store_errors_total", "Failed attempts to store assembled samples (they are kept and retried)."),
		heldTraces:  d("waterline_otlp_buffered_traces", "Incomplete traces held in memory."),
		heldSpans:   d("waterline_otlp_buffered_spans", "Spans of incomplete traces held in memory."),
		pendingDesc: d("waterline_otlp_pending_samples", "Assembled samples waiting for the store."),
	}
}

func (t *traceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{t.spans, t.dropped, t.samples, t.cutShort, t.sinkErrs, t.heldTraces, t.heldSpans, t.pendingDesc} {
		ch <- d
	}
}

func (t *traceCollector) Collect(ch chan<- prometheus.Metric) {
	st := t.a.Stats()
	for i, name := range otlp.SpanOutcomes {
		ch <- prometheus.MustNewConstMetric(t.spans, prometheus.CounterValue, float64(st.Spans[i].Load()), name)
	}
	for i, name := range otlp.DropReasons {
		ch <- prometheus.MustNewConstMetric(t.dropped, prometheus.CounterValue, float64(st.Dropped[i].Load()), name)
	}
	ch <- prometheus.MustNewConstMetric(t.samples, prometheus.CounterValue, float64(st.Samples.Load()))
	ch <- prometheus.MustNewConstMetric(t.cutShort, prometheus.CounterValue, float64(st.CutShort.Load()))
	ch <- prometheus.MustNewConstMetric(t.sinkErrs, prometheus.CounterValue, float64(st.SinkErrors.Load()))
	traces, spans, pending := t.a.Held()
	ch <- prometheus.MustNewConstMetric(t.heldTraces, prometheus.GaugeValue, float64(traces))
	ch <- prometheus.MustNewConstMetric(t.heldSpans, prometheus.GaugeValue, float64(spans))
	ch <- prometheus.MustNewConstMetric(t.pendingDesc, prometheus.GaugeValue, float64(pending))
}
