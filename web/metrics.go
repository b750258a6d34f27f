package web

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the router's own Prometheus metrics (web/api adds the
// ingest counters), served on /metrics.
type metrics struct {
	requestDuration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "waterline_http_request_duration_seconds",
			Help:    "HTTP request duration by method, route pattern and status.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "status"}),
	}
	reg.MustRegister(m.requestDuration)
	return m
}

func (s *Server) handleMetrics(c echo.Context) error {
	promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
