package web

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's own Prometheus metrics, served on /metrics.
type metrics struct {
	requestDuration *prometheus.HistogramVec
	ingestRecords   *prometheus.CounterVec // by kind (events, samples) and outcome (accepted, duplicate)
	ingestBytes     *prometheus.CounterVec // by kind, decompressed
	ingestErrors    *prometheus.CounterVec // by kind and reason
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "waterline_http_request_duration_seconds",
			Help:    "HTTP request duration by method, route pattern and status.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "status"}),
		ingestRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_ingest_records_total",
			Help: "Ingested records by kind (events, samples, alerts) and outcome (accepted, duplicate).",
		}, []string{"kind", "outcome"}),
		ingestBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_ingest_bytes_total",
			Help: "Decompressed ingest body bytes by kind.",
		}, []string{"kind"}),
		ingestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_ingest_errors_total",
			Help: "Rejected ingest requests by kind and reason.",
		}, []string{"kind", "reason"}),
	}
	reg.MustRegister(m.requestDuration, m.ingestRecords, m.ingestBytes, m.ingestErrors)
	return m
}

func (s *Server) handleMetrics(c echo.Context) error {
	promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
