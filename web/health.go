package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
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
			// The probe needs no token: the driver's error (the database's
			// user, name, host and port, its server's message) goes to the
			// log, the answer only says which kind of problem it is.
			s.log.WarnContext(c.Request().Context(), "not ready", "request_id", requestID(c), "err", err)
			why := "see the server log, request " + requestID(c)
			if store.IsUnavailable(err) {
				why = "database unreachable"
			}
			return c.String(http.StatusServiceUnavailable, "not ready: "+why+"\n")
		}
	}
	return c.String(http.StatusOK, "ready\n")
}
