package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// A request that ran out of its time limit is a 503 that says when to
// come back, as the OpenAPI document's 503 promises: clients that retry
// on 503 (gateways, Alertmanager) wait for Retry-After.
func TestTimedOutRequestSaysWhenToRetry(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e := echo.New()
	e.HTTPErrorHandler = s.errorHandler
	e.GET("/api/v1/slow", func(c echo.Context) error {
		return fmt.Errorf("reading curves: %w", context.DeadlineExceeded)
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/slow", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("%d, Retry-After %q: want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}
