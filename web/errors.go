package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// clientGone reports whether the client went away before its answer: the
// server's own context of the request (not the one withTimeout derived,
// which is already cancelled when errors are handled) is cancelled.
func clientGone(c echo.Context) bool {
	ctx, ok := c.Get(clientCtxKey).(context.Context)
	return ok && errors.Is(ctx.Err(), context.Canceled)
}

// otlpTracesPath is the OTLP/HTTP trace receiver's standard path.
const otlpTracesPath = "/v1/traces"

// statusClientClosed is nginx's "client closed request".
const statusClientClosed = 499

// errorHandler maps every error a handler returns onto one response, in
// one place: input problems keep their status, line and field; store
// sentinels become 404/409; anything else is a 500 whose detail goes only
// to the log.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	req := c.Request()
	status, body := http.StatusInternalServerError, wire.Error{Error: "internal error; see the server log for request " + requestID(c)}
	var (
		re *request.Error
		he *echo.HTTPError
		be *echo.BindingError
	)
	switch {
	case errors.As(err, &re):
		// Before the client-gone check: a failed body read (a stall, a
		// cut connection) also cancels the server's context, and its
		// status says what happened.
		status, body = re.Status, wire.Error{Error: re.Msg, Line: re.Line, Field: re.Field}
	case clientGone(c):
		// The client went away (or the server is shutting down) before
		// the answer: nginx's 499, not a server error.
		status, body = statusClientClosed, wire.Error{Error: "client closed request"}
	case errors.Is(err, store.ErrNotFound):
		status, body = http.StatusNotFound, wire.Error{Error: "not found"}
	case errors.Is(err, store.ErrConflict):
		status, body = http.StatusConflict, wire.Error{Error: err.Error()}
	case errors.As(err, &be):
		status, body = http.StatusBadRequest, wire.Error{Error: fmt.Sprint(be.Message), Field: be.Field}
	case errors.As(err, &he):
		status, body = he.Code, wire.Error{Error: fmt.Sprint(he.Message)}
	case errors.Is(err, context.DeadlineExceeded):
		// Overloaded, or a read too big for the time limit: the same
		// request may pass once the load has gone, so say when to retry.
		c.Response().Header().Set("Retry-After", "5")
		status, body = http.StatusServiceUnavailable, wire.Error{Error: "request timed out"}
	case store.IsUnavailable(err):
		// The client (Alertmanager, a gateway) should retry, which 503 and
		// Retry-After say. Ingest is idempotent, so a retry after a commit
		// whose answer was lost stores nothing twice; not every write is
		// (a webhook registered, an incident without an Idempotency-Key),
		// so the answer promises nothing about that.
		c.Response().Header().Set("Retry-After", "1")
		status, body = http.StatusServiceUnavailable, wire.Error{Error: "database unavailable; retry shortly"}
	}
	if status >= 500 {
		s.log.ErrorContext(req.Context(), "request failed", "request_id", requestID(c),
			"method", req.Method, "path", logPath(c), "err", err)
	}
	if status == statusClientClosed {
		_ = c.NoContent(status) // nobody reads it; the log and metrics record it
		return
	}
	if req.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	if req.URL.Path == otlpTracesPath {
		// OTLP/HTTP clients read every error as a google.rpc.Status in
		// their request's encoding.
		var retry bool
		if status, retry = ingest.OTLPStatus(status); retry {
			c.Response().Header().Set("Retry-After", "1")
		}
		enc := ingest.TraceEncoding(req)
		_ = c.Blob(status, otlp.ContentType(enc), otlp.EncodeStatus(status, body.Error, enc))
		return
	}
	if wantsHTML(req) {
		_ = s.pages.RenderError(c, status, body.Error)
		return
	}
	_ = c.JSON(status, body)
}
