package wire

import (
	"encoding/json"
	"time"
)

// WebhookCreate is the body of POST /api/v1/webhooks. Format defaults to
// waterline and events to all of them.
type WebhookCreate struct {
	URL    string   `json:"url"`
	Secret string   `json:"secret"`
	Format string   `json:"format,omitempty"` // waterline, jira or servicenow
	Events []string `json:"events,omitempty"`
}

// Webhook is a registered receiver. The secret is write-only, and a
// password in the URL is masked.
type Webhook struct {
	ID        int64     `json:"id"`
	URL       string    `json:"url"`
	Format    string    `json:"format"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
}

// WebhookList is the answer of GET /api/v1/webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Delivery is one row of a webhook's delivery log.
type Delivery struct {
	ID              int64           `json:"id"`
	WebhookID       int64           `json:"webhook_id"`
	IncidentID      int64           `json:"incident_id"`
	Event           string          `json:"event"`
	AnalysisVersion int             `json:"analysis_version,omitempty"`
	IdempotencyKey  string          `json:"idempotency_key"`
	Status          string          `json:"status"` // pending, delivered or failed
	Attempts        int             `json:"attempts"`
	LastStatus      *int            `json:"last_status"`
	LastError       string          `json:"last_error,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	LastAttemptAt   *time.Time      `json:"last_attempt_at"`
	NextAttemptAt   *time.Time      `json:"next_attempt_at"` // while pending
	DeliveredAt     *time.Time      `json:"delivered_at"`
	Payload         json.RawMessage `json:"payload"` // the body as sent
}

// DeliveryPage is the answer of GET /api/v1/webhooks/{id}/deliveries.
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// WebhookEvent is the body of a webhook in the waterline format: the
// incident as GET /api/v1/incidents/{id} answers it, field for field,
// plus what happened.
type WebhookEvent struct {
	Incident
	Event            string    `json:"event"` // incident.opened, incident.resolved, analysis.ready or cause.changed
	OccurredAt       time.Time `json:"occurred_at"`
	AnalysisVersion  int       `json:"analysis_version,omitempty"`
	PreviousTopCause string    `json:"previous_top_cause,omitempty"`
}
