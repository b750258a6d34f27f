package web

import (
	"html"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

// renderError shows an error to a browser.
func (s *Server) renderError(c echo.Context, status int, msg string) error {
	return c.HTML(status, "<!doctype html><title>"+strconv.Itoa(status)+"</title><p role=alert>"+html.EscapeString(msg)+"</p>")
}

var _ = http.StatusOK
