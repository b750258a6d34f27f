package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// handleHealthz answers while the process is alive; it checks nothing else.
func (s *Server) handleHealthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// handleReadyz answers 200 when Postgres is reachable and migrations are
// current, 503 with the reason otherwise.
func (s *Server) handleReadyz(c echo.Context) error {
	if s.ready != nil {
		if err := s.ready(c.Request().Context()); err != nil {
			return c.String(http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
		}
	}
	return c.String(http.StatusOK, "ready\n")
}
