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
	// IncludeShareLink puts a read-only link to the incident in every
	// delivery (Jira's link, ServiceNow's description, share_url), so a
	// ticket reader without an account can open it.
	IncludeShareLink bool `json:"include_share_link,omitempty"`
}

// Webhook is a registered receiver. The secret is write-only, and a
// password in the URL is masked.
type Webhook struct {
	ID        int64     `json:"id"`
	URL       string    `json:"url"`
	Format    string    `json:"format"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	// IncludeShareLink: deliveries carry a read-only link to the incident.
	IncludeShareLink bool `json:"include_share_link"`
	// PausedUntil: its receiver is struggling or asked for quiet (no
	// answer, slow errors, 429, Retry-After); no delivery goes out before.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
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
	// ShareURL is a read-only link to the incident for people without an
	// account, when the webhook asks for it and sharing was not revoked.
	ShareURL string `json:"share_url,omitempty"`
}

// JiraRemoteLink is a Jira remote issue link (POST /rest/api/3/issue/{key}/remotelink):
// posting it again with the same globalId updates the link in place, so
// each event refreshes one link, struck through once resolved.
type JiraRemoteLink struct {
	GlobalID     string          `json:"globalId"`
	Application  JiraApplication `json:"application"`
	Relationship string          `json:"relationship"`
	Object       JiraObject      `json:"object"`
}

// JiraApplication names the system a remote link comes from.
type JiraApplication struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// JiraObject is what the link shows: the permalink, a title, a summary
// and a status icon.
type JiraObject struct {
	URL     string     `json:"url"`
	Title   string     `json:"title"`
	Summary string     `json:"summary"`
	Icon    JiraIcon   `json:"icon"`
	Status  JiraStatus `json:"status"`
}

// JiraIcon is a 16×16 icon and its tooltip.
type JiraIcon struct {
	URL16x16 string `json:"url16x16"`
	Title    string `json:"title"`
}

// JiraStatus strikes the link through once resolved.
type JiraStatus struct {
	Resolved bool     `json:"resolved"`
	Icon     JiraIcon `json:"icon"`
}

// SlackMessage is the body of a slack-format delivery: a Slack message as
// an incoming webhook takes it. Text is the notification's line; Blocks
// show the linked incident, what happened, the top cause and the scope.
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
	// UnfurlLinks asks Slack for the link's preview card, which a message
	// posted through a webhook does not get otherwise.
	UnfurlLinks bool `json:"unfurl_links"`
}

// SlackBlock is a Block Kit block: a section with text, or a context with
// elements.
type SlackBlock struct {
	Type     string      `json:"type"`
	Text     *SlackText  `json:"text,omitempty"`
	Elements []SlackText `json:"elements,omitempty"`
}

// SlackText is a Block Kit text object (mrkdwn).
type SlackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ServiceNowEvents is the body of ServiceNow Event Management's
// POST /api/global/em/jsonv2.
type ServiceNowEvents struct {
	Records []ServiceNowEvent `json:"records"`
}

// ServiceNowEvent is one Event Management record. message_key is
// event_class + "/incidents/" + the incident id, so every event of one
// incident updates one alert (and no other installation's), which
// severity 0 with resolution_state Closing closes.
type ServiceNowEvent struct {
	Source          string `json:"source"`
	EventClass      string `json:"event_class"`
	Node            string `json:"node"`
	Resource        string `json:"resource"`
	MetricName      string `json:"metric_name"`
	Type            string `json:"type"`
	MessageKey      string `json:"message_key"`
	Severity        string `json:"severity"`
	Description     string `json:"description"`
	AdditionalInfo  string `json:"additional_info"`
	TimeOfEvent     string `json:"time_of_event"`
	ResolutionState string `json:"resolution_state"`
}

// ShareLink is the answer of POST /api/v1/incidents/{id}/share: the
// incident's read-only link, shown this once.
type ShareLink struct {
	URL string `json:"url"`
}
