package web

import (
	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// routes lists Waterline's whole HTTP surface.
func (s *Server) routes(e *echo.Echo) {
	e.Use(s.withRequestID, s.withLogAndMetrics, s.withTimeout)

	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.handleMetrics)

	read := s.requireScope(store.ScopeRead)
	write := s.requireScope(store.ScopeWrite)
	api := e.Group("/api/v1")
	api.POST("/events", s.handleEventsCreate, write)
	api.POST("/samples", s.handleSamplesCreate, write)
	api.POST("/alerts/alertmanager", s.handleAlertmanager, write)
	api.POST("/incidents", s.handleIncidentsCreate, write)
	api.GET("/incidents", s.handleIncidentsList, read)
	api.GET("/incidents/:id", s.handleIncidentsGet, read)
	api.GET("/timeline", s.handleTimelineGet, read)
	api.GET("/pull/status", s.handlePullStatusGet, read)
	api.POST("/incidents/:id/resolve", s.handleIncidentsResolve, write)
	api.GET("/incidents/:id/analysis", s.handleAnalysisGet, read)
	api.GET("/spikes", s.handleSpikesList, read)
}
