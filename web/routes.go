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
	_ = read
	_ = write
	api := e.Group("/api/v1")
	_ = api
}
