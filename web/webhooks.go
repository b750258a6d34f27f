package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// webhookCreate is the body of POST /api/v1/webhooks.
type webhookCreate struct {
	URL    string   `json:"url"`
	Secret string   `json:"secret"`
	Format string   `json:"format"`
	Events []string `json:"events"`
}

// webhookView is a webhook on the wire. The secret is write-only, and a
// password in the URL (basic auth for Jira or ServiceNow) is masked.
type webhookView struct {
	ID        int64     `json:"id"`
	URL       string    `json:"url"`
	Format    string    `json:"format"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
}

func newWebhookView(w store.Webhook) webhookView {
	u := w.URL
	if p, err := url.Parse(w.URL); err == nil {
		u = p.Redacted()
	}
	return webhookView{ID: w.ID, URL: u, Format: w.Format, Events: w.Events, CreatedAt: w.CreatedAt}
}

// Limits of a webhook registration.
const (
	maxWebhookBody   = 16 << 10
	maxWebhookURL    = 2000
	minWebhookSecret = 16
	maxWebhookSecret = 256
)

// handleWebhooksCreate is POST /api/v1/webhooks (admin): register a
// receiver → 201 with the webhook, without its secret.
func (s *Server) handleWebhooksCreate(c echo.Context) error {
	raw, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxWebhookBody))
	if err != nil {
		var me *http.MaxBytesError
		if errors.As(err, &me) {
			return &inputError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body larger than %d bytes", maxWebhookBody)}
		}
		return badInput("", "reading the request body failed: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return badInput("", `empty body: send {"url", "secret", "format"?, "events"?}`)
	}
	var w webhookCreate
	if err := decodeRecord(raw, 0, &w); err != nil {
		return err
	}
	n, err := checkWebhook(w)
	if err != nil {
		return err
	}
	hook, err := s.store.CreateWebhook(c.Request().Context(), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, newWebhookView(hook))
}

// checkWebhook validates a registration and fills defaults: format
// waterline, every event.
func checkWebhook(w webhookCreate) (store.NewWebhook, error) {
	u, err := url.Parse(strings.TrimSpace(w.URL))
	switch {
	case w.URL == "":
		return store.NewWebhook{}, invalid("url", "required: the receiver's http(s) URL")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return store.NewWebhook{}, invalid("url", "want an absolute http(s) URL, got %q", w.URL)
	case len(w.URL) > maxWebhookURL:
		return store.NewWebhook{}, invalid("url", "longer than %d bytes", maxWebhookURL)
	}
	if len(w.Secret) < minWebhookSecret || len(w.Secret) > maxWebhookSecret {
		return store.NewWebhook{}, invalid("secret", "want %d to %d characters (the HMAC-SHA256 key receivers verify signatures with), got %d",
			minWebhookSecret, maxWebhookSecret, len(w.Secret))
	}
	format := w.Format
	if format == "" {
		format = store.WebhookFormatWaterline
	}
	if format != store.WebhookFormatWaterline && format != store.WebhookFormatJira && format != store.WebhookFormatServiceNow {
		return store.NewWebhook{}, invalid("format", "want waterline, jira or servicenow, got %q", w.Format)
	}
	events := w.Events
	if len(events) == 0 {
		events = store.WebhookEvents
	}
	var uniq []string
	for i, e := range events {
		if !slices.Contains(store.WebhookEvents, e) {
			return store.NewWebhook{}, invalid("events["+strconv.Itoa(i)+"]", "want one of %s, got %q", strings.Join(store.WebhookEvents, ", "), e)
		}
		if !slices.Contains(uniq, e) {
			uniq = append(uniq, e)
		}
	}
	return store.NewWebhook{URL: u.String(), Secret: w.Secret, Format: format, Events: uniq}, nil
}

// handleWebhooksList is GET /api/v1/webhooks (admin).
func (s *Server) handleWebhooksList(c echo.Context) error {
	hooks, err := s.store.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]webhookView, len(hooks))
	for i, h := range hooks {
		out[i] = newWebhookView(h)
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": out})
}

// webhookID parses the {id} path parameter.
func webhookID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, store.ErrNotFound
	}
	return id, nil
}

// handleWebhooksDelete is DELETE /api/v1/webhooks/{id} (admin) → 204; its
// pending deliveries are dropped with it.
func (s *Server) handleWebhooksDelete(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteWebhook(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// deliveryView is one row of the delivery log on the wire.
type deliveryView struct {
	ID              int64           `json:"id"`
	WebhookID       int64           `json:"webhook_id"`
	IncidentID      int64           `json:"incident_id"`
	Event           string          `json:"event"`
	AnalysisVersion int             `json:"analysis_version,omitempty"`
	IdempotencyKey  string          `json:"idempotency_key"`
	Status          string          `json:"status"`
	Attempts        int             `json:"attempts"`
	LastStatus      *int            `json:"last_status"`
	LastError       string          `json:"last_error,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	LastAttemptAt   *time.Time      `json:"last_attempt_at"`
	NextAttemptAt   *time.Time      `json:"next_attempt_at"` // while pending
	DeliveredAt     *time.Time      `json:"delivered_at"`
	Payload         json.RawMessage `json:"payload"`
}

// handleWebhookDeliveries is GET /api/v1/webhooks/{id}/deliveries?limit=&cursor=
// (admin): the delivery log, newest first.
func (s *Server) handleWebhookDeliveries(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.WebhookByID(ctx, id); err != nil {
		return err
	}
	limit := 50
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return badInput("limit", "want a number from 1 to 500, got %q", v)
		}
		limit = n
	}
	list, next, err := s.store.Deliveries(ctx, id, c.QueryParam("cursor"), limit)
	if errors.Is(err, store.ErrBadDeliveryCursor) {
		return badInput("cursor", "not a cursor from a previous page's next_cursor")
	}
	if err != nil {
		return err
	}
	out := make([]deliveryView, len(list))
	for i, d := range list {
		v := deliveryView{
			ID: d.ID, WebhookID: d.WebhookID, IncidentID: d.IncidentID, Event: d.Event, AnalysisVersion: d.AnalysisVersion,
			IdempotencyKey: d.IdempotencyKey, Status: d.Status, Attempts: d.Attempts, LastStatus: d.LastStatus,
			LastError: d.LastError, CreatedAt: d.CreatedAt, LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt,
			Payload: json.RawMessage(d.Body),
		}
		if d.Status == store.DeliveryPending {
			at := d.NextAttemptAt
			v.NextAttemptAt = &at
		}
		out[i] = v
	}
	body := map[string]any{"deliveries": out}
	if next != "" {
		body["next_cursor"] = next
	}
	return c.JSON(http.StatusOK, body)
}
