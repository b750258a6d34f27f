package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// apiError is the JSON error body of DESIGN §4: line and field where they
// apply.
type apiError struct {
	Error string `json:"error"`
	Line  int    `json:"line,omitempty"`
	Field string `json:"field,omitempty"`
}

// inputError is a problem with the request's content: which line (1-based,
// 0 when not line-oriented) and which field, and the HTTP status to answer.
type inputError struct {
	Status int
	Line   int
	Field  string
	Msg    string
}

func (e *inputError) Error() string {
	switch {
	case e.Line > 0 && e.Field != "":
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	case e.Field != "":
		return fmt.Sprintf("%s: %s", e.Field, e.Msg)
	}
	return e.Msg
}

// badInput returns a 400 inputError for a malformed request.
func badInput(field, format string, args ...any) *inputError {
	return &inputError{Status: http.StatusBadRequest, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// invalid returns a 422 inputError for a well-formed request with a bad value.
func invalid(field, format string, args ...any) *inputError {
	return &inputError{Status: http.StatusUnprocessableEntity, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// errorHandler maps every error a handler returns onto one response, in
// one place: input problems keep their status, line and field; store
// sentinels become 404/409; anything else is a 500 whose detail goes only
// to the log.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	req := c.Request()
	status, body := http.StatusInternalServerError, apiError{Error: "internal error; see the server log for request " + requestID(c)}
	var (
		ie *inputError
		he *echo.HTTPError
		be *echo.BindingError
	)
	switch {
	case errors.As(err, &ie):
		status, body = ie.Status, apiError{Error: ie.Msg, Line: ie.Line, Field: ie.Field}
	case errors.Is(err, store.ErrNotFound):
		status, body = http.StatusNotFound, apiError{Error: "not found"}
	case errors.Is(err, store.ErrConflict):
		status, body = http.StatusConflict, apiError{Error: err.Error()}
	case errors.As(err, &be):
		status, body = http.StatusBadRequest, apiError{Error: fmt.Sprint(be.Message), Field: be.Field}
	case errors.As(err, &he):
		status, body = he.Code, apiError{Error: fmt.Sprint(he.Message)}
	case errors.Is(err, context.DeadlineExceeded):
		status, body = http.StatusServiceUnavailable, apiError{Error: "request timed out"}
	case store.IsUnavailable(err):
		// The client (Alertmanager, a gateway) should retry, which 503 and
		// Retry-After say; writes are idempotent, so a retry after a commit
		// whose answer was lost stores nothing twice.
		c.Response().Header().Set("Retry-After", "1")
		status, body = http.StatusServiceUnavailable, apiError{Error: "database unavailable; retry shortly (writes are idempotent, so retrying is safe)"}
	}
	if status >= 500 {
		s.log.ErrorContext(req.Context(), "request failed", "request_id", requestID(c),
			"method", req.Method, "path", req.URL.Path, "err", err)
	}
	if req.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	if wantsHTML(req) {
		_ = s.renderError(c, status, body.Error)
		return
	}
	_ = c.JSON(status, body)
}
