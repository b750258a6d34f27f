package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Webhook formats: what a delivery's body looks like.
const (
	WebhookFormatWaterline  = "waterline"
	WebhookFormatJira       = "jira"
	WebhookFormatServiceNow = "servicenow"
	WebhookFormatSlack      = "slack"
)

// Webhook events: what a delivery announces.
const (
	EventIncidentOpened   = "incident.opened"
	EventAnalysisReady    = "analysis.ready"
	EventCauseChanged     = "cause.changed"
	EventIncidentResolved = "incident.resolved"
)

// WebhookEvents lists every event a webhook may subscribe to.
var WebhookEvents = []string{EventIncidentOpened, EventAnalysisReady, EventCauseChanged, EventIncidentResolved}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Webhook is a registered receiver. Secret is the HMAC key; the API never
// shows it.
type Webhook struct {
	ID        int64
	URL       string
	Secret    string
	Format    string
	Events    []string
	CreatedAt time.Time
	// IncludeShareLink: deliveries carry a read-only link to the incident
	// (WebhookShareToken).
	IncludeShareLink bool
	// PausedUntil is when its receiver's pause ends (PauseWebhook); nil:
	// never paused.
	PausedUntil *time.Time
}

// webhookColumns are what scanWebhook reads.
const webhookColumns = `id, url, secret, format, events, created_at, include_share_link, paused_until`

// NewWebhook is what CreateWebhook needs.
type NewWebhook struct {
	URL    string
	Secret string
	Format string
	Events []string
	// IncludeShareLink: deliveries carry a read-only link to the incident.
	IncludeShareLink bool
}

// CreateWebhook stores a new webhook and returns it.
func (s *Store) CreateWebhook(ctx context.Context, n NewWebhook) (Webhook, error) {
	w := Webhook{URL: n.URL, Secret: n.Secret, Format: n.Format, Events: n.Events, IncludeShareLink: n.IncludeShareLink}
	err := s.db.QueryRow(ctx, `INSERT INTO webhooks (url, secret, format, events, include_share_link) VALUES ($1, $2, $3, $4, $5)
		RETURNING id, created_at`, n.URL, n.Secret, n.Format, n.Events, n.IncludeShareLink).Scan(&w.ID, &w.CreatedAt)
	if err != nil {
		return Webhook{}, wrap("create webhook", err)
	}
	return w, nil
}

// WebhookExistsError is CreateWebhookOnce's answer to a registration of
// a URL and format that another webhook already has, differently.
type WebhookExistsError struct{ ID int64 }

func (e *WebhookExistsError) Error() string {
	return fmt.Sprintf("webhook %d already sends this format to this URL, with another secret, events or share setting; delete it first", e.ID)
}

func (e *WebhookExistsError) Unwrap() error { return ErrConflict }

// CreateWebhookOnce is CreateWebhook for a request that may be retried:
// a webhook with the same URL, format, secret, events and share setting
// is returned as it is (created false); one with the same URL and format
// but otherwise different is a *WebhookExistsError. Registrations of one
// URL are serialised, so concurrent retries make one webhook.
func (s *Store) CreateWebhookOnce(ctx context.Context, n NewWebhook) (w Webhook, created bool, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('waterline.webhook.' || $1))`, n.URL); err != nil {
			return wrap("lock webhook url", err)
		}
		rows, err := tx.db.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks
			WHERE url = $1 AND format = $2 ORDER BY id LIMIT 1`, n.URL, n.Format)
		if err != nil {
			return wrap("webhook", err)
		}
		old, err := pgx.CollectExactlyOneRow(rows, scanWebhook)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			w, err = tx.CreateWebhook(ctx, n)
			created = err == nil
			return err
		case err != nil:
			return wrap("webhook", err)
		case old.Secret == n.Secret && slices.Equal(old.Events, n.Events) && old.IncludeShareLink == n.IncludeShareLink:
			w = old
			return nil
		}
		return &WebhookExistsError{ID: old.ID}
	})
	return w, created, err
}

// Webhooks lists every webhook, oldest first.
func (s *Store) Webhooks(ctx context.Context) ([]Webhook, error) {
	rows, err := s.db.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks ORDER BY id`)
	if err != nil {
		return nil, wrap("webhooks", err)
	}
	out, err := pgx.CollectRows(rows, scanWebhook)
	return out, wrap("webhooks", err)
}

// WebhookByID returns one webhook, or ErrNotFound.
func (s *Store) WebhookByID(ctx context.Context, id int64) (Webhook, error) {
	rows, err := s.db.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return Webhook{}, wrap("webhook", err)
	}
	w, err := pgx.CollectExactlyOneRow(rows, scanWebhook)
	return w, wrap("webhook", err)
}

func scanWebhook(row pgx.CollectableRow) (Webhook, error) {
	var w Webhook
	err := row.Scan(&w.ID, &w.URL, &w.Secret, &w.Format, &w.Events, &w.CreatedAt, &w.IncludeShareLink, &w.PausedUntil)
	w.CreatedAt = w.CreatedAt.UTC()
	w.PausedUntil = utcPtr(w.PausedUntil)
	return w, err
}

// DeleteWebhook removes a webhook and its delivery log; pending deliveries
// are never sent. A delivery being sent right now finishes first (its row
// is locked). It returns ErrNotFound when there is no such webhook.
func (s *Store) DeleteWebhook(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return wrap("delete webhook", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// NewDelivery is one message to queue for one webhook.
type NewDelivery struct {
	WebhookID       int64
	IncidentID      int64
	Event           string
	AnalysisVersion int
	IdempotencyKey  string
	Body            []byte
	DueAt           time.Time
	// Render, if set, makes Body from the incident as it is when the
	// delivery is queued: read under the lock that orders the webhook's
	// deliveries of the incident, so the body is never older than an
	// event queued before it (an analysis.ready rendered while the
	// incident was open must not follow its incident.resolved). It is
	// called only when the delivery is not queued yet; it must not use the
	// database.
	Render func(Incident) ([]byte, error)
}

// EnqueueDelivery queues a delivery unless the webhook already has one
// with the same idempotency key, or of the same incident, event and
// analysis version (the same event noticed twice, by one replica or two,
// or under a key made with another public URL), or analysis.ready of the
// incident for any version (a slow analyzer's older version finishing
// after a newer one was announced), or a cause.changed to the cause the
// webhook was last told of (toldAlready): queued reports whether a row
// was added. With n.Render the body is made from the incident as it is at
// that moment (see NewDelivery.Render).
func (s *Store) EnqueueDelivery(ctx context.Context, n NewDelivery) (queued bool, err error) {
	// Serialised per webhook and incident, so two replicas with different
	// keys (public URLs) cannot both pass the NOT EXISTS.
	err = s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('waterline.delivery'), hashtext($1::bigint::text || '/' || $2::bigint::text))`,
			n.WebhookID, n.IncidentID); err != nil {
			return err
		}
		if n.Render != nil {
			// Rendered now, after the lock: whatever was queued before this
			// for the webhook and incident was queued from an incident state
			// that committed before it, and this statement sees that state
			// (read committed). Nothing is read or rendered for a delivery
			// that is queued already, which is what a sweep mostly finds.
			var queuedAlready bool
			if err := tx.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
				WHERE webhook_id = $1 AND (idempotency_key = $5
				   OR (incident_id = $2 AND event = $3 AND (analysis_version = $4 OR event = 'analysis.ready'))))
				OR `+toldAlready, n.WebhookID, n.IncidentID, n.Event, n.AnalysisVersion, n.IdempotencyKey).Scan(&queuedAlready); err != nil {
				return err
			}
			if queuedAlready {
				return nil
			}
			in, err := tx.Incident(ctx, n.IncidentID)
			if errors.Is(err, ErrNotFound) {
				return nil // deleted meanwhile: nothing to tell
			}
			if err != nil {
				return err
			}
			if n.Body, err = n.Render(in); err != nil {
				return err
			}
		}
		tag, err := tx.db.Exec(ctx, `
			INSERT INTO webhook_deliveries (webhook_id, incident_id, event, analysis_version, idempotency_key, body, next_attempt_at, created_at)
			SELECT $1, $2, $3, $4, $5, $6, $7, $7
			WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries
			                  WHERE webhook_id = $1 AND incident_id = $2 AND event = $3
			                    AND (analysis_version = $4 OR event = 'analysis.ready'))
			  AND NOT `+toldAlready+`
			ON CONFLICT (webhook_id, idempotency_key) DO NOTHING`,
			n.WebhookID, n.IncidentID, n.Event, n.AnalysisVersion, n.IdempotencyKey, string(n.Body), n.DueAt)
		queued = err == nil && tag.RowsAffected() == 1
		return err
	})
	return queued, wrap("enqueue delivery", err)
}

// toldAlready is true when delivery $1/$2/$3/$4 (webhook, incident,
// event, analysis version) is a cause.changed whose version's top cause
// is the one the webhook was last told of (by the newest version it was
// sent analysis.ready or cause.changed for). The notifier reads the cause
// last told before it queues, outside this lock: two versions with the
// same new cause, finished at once by two replicas, were both news and
// the change was sent twice. A version without a stored analysis is
// never told already.
const toldAlready = `($3 = 'cause.changed' AND EXISTS (SELECT 1 FROM analyses a
	WHERE a.incident_id = $2 AND a.version = $4
	  AND a.top_cause = (SELECT t.top_cause FROM webhook_deliveries d
	                     JOIN analyses t ON t.incident_id = d.incident_id AND t.version = d.analysis_version
	                     WHERE d.webhook_id = $1 AND d.incident_id = $2 AND d.event IN ('analysis.ready', 'cause.changed')
	                     ORDER BY d.analysis_version DESC LIMIT 1)))`

// Delivery is one row of the delivery log.
type Delivery struct {
	ID              int64
	WebhookID       int64
	IncidentID      int64
	Event           string
	AnalysisVersion int
	IdempotencyKey  string
	Body            []byte
	Status          string // DeliveryPending, DeliveryDelivered or DeliveryFailed
	Attempts        int
	NextAttemptAt   time.Time
	LastAttemptAt   *time.Time
	LastStatus      *int // HTTP status of the last attempt; nil when it got no answer
	LastError       string
	CreatedAt       time.Time
	DeliveredAt     *time.Time
}

const deliveryColumns = `d.id, d.webhook_id, d.incident_id, d.event, d.analysis_version, d.idempotency_key, d.body, d.status,
	d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at`

func scanDelivery(row pgx.CollectableRow) (Delivery, error) {
	var (
		d    Delivery
		body string
	)
	err := row.Scan(&d.ID, &d.WebhookID, &d.IncidentID, &d.Event, &d.AnalysisVersion, &d.IdempotencyKey, &body, &d.Status,
		&d.Attempts, &d.NextAttemptAt, &d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.CreatedAt, &d.DeliveredAt)
	d.Body = []byte(body)
	d.NextAttemptAt, d.CreatedAt = d.NextAttemptAt.UTC(), d.CreatedAt.UTC()
	d.LastAttemptAt, d.DeliveredAt = utcPtr(d.LastAttemptAt), utcPtr(d.DeliveredAt)
	return d, err
}

// ErrBadDeliveryCursor means a cursor was not made by Deliveries.
var ErrBadDeliveryCursor = errors.New("bad delivery cursor")

// Deliveries returns one page of a webhook's delivery log, newest first,
// and the cursor of the next page ("" on the last). limit is 1..500 (0 =
// 50).
func (s *Store) Deliveries(ctx context.Context, webhookID int64, cursor string, limit int) ([]Delivery, string, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 500)
	var before *int64
	if cursor != "" {
		id, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || id <= 0 {
			return nil, "", ErrBadDeliveryCursor
		}
		before = &id
	}
	rows, err := s.db.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
		WHERE d.webhook_id = $1 AND ($2::bigint IS NULL OR d.id < $2)
		ORDER BY d.id DESC LIMIT $3`, webhookID, before, limit+1)
	if err != nil {
		return nil, "", wrap("deliveries", err)
	}
	out, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, "", wrap("deliveries", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(out[limit-1].ID, 10)
	}
	return out, next, nil
}

// DueDelivery is a claimed delivery with what sending it needs.
type DueDelivery struct {
	Delivery
	URL    string
	Secret string
}

// ClaimDueDelivery locks the delivery that has waited longest among those
// due at now, skipping rows another sender holds, deliveries of a paused
// webhook (PauseWebhook) and deliveries whose incident has an earlier one
// still pending for the same webhook (a receiver sees an incident's events
// in the order they happened: resolved never before an opened that waits
// for its retry), and returns it with its webhook's URL and secret;
// ErrNotFound when none is due. Call it on a
// Store inside a transaction (InTx): the lock lasts until that
// transaction ends, which is what keeps other senders off the row while
// it is being sent.
func (s *Store) ClaimDueDelivery(ctx context.Context, now time.Time) (DueDelivery, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+deliveryColumns+`, w.url, w.secret
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.status = 'pending' AND d.next_attempt_at <= $1
		  AND (w.paused_until IS NULL OR w.paused_until <= $1)
		  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e
		                  WHERE e.incident_id = d.incident_id AND e.webhook_id = d.webhook_id
		                    AND e.status = 'pending' AND e.id < d.id)
		ORDER BY d.next_attempt_at, d.id
		LIMIT 1
		FOR UPDATE OF d SKIP LOCKED`, now)
	if err != nil {
		return DueDelivery{}, wrap("claim delivery", err)
	}
	due, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (DueDelivery, error) {
		var (
			d    DueDelivery
			body string
		)
		err := row.Scan(&d.ID, &d.WebhookID, &d.IncidentID, &d.Event, &d.AnalysisVersion, &d.IdempotencyKey, &body, &d.Status,
			&d.Attempts, &d.NextAttemptAt, &d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.CreatedAt, &d.DeliveredAt,
			&d.URL, &d.Secret)
		d.Body = []byte(body)
		return d, err
	})
	return due, wrap("claim delivery", err)
}

// BoundClaim makes the server end the current transaction (a delivery's
// claim) and its session if it sits idle for longer than d: a sender whose
// host dies, or is cut off, mid-send sends no FIN or reset, and the server
// would keep its claim's row locked for as long as TCP keepalive takes
// (two hours and more by default) — that delivery, and every later one of
// its incident for the webhook, which wait behind it. Call it on a Store
// inside the claim's transaction, with d past the longest a send keeps
// the transaction idle.
func (s *Store) BoundClaim(ctx context.Context, d time.Duration) error {
	_, err := s.db.Exec(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $1, true)`,
		strconv.FormatInt(max(d.Milliseconds(), 1), 10))
	return wrap("bound claim", err)
}

// Attempt is the outcome of one try at sending a delivery.
type Attempt struct {
	At         time.Time
	HTTPStatus int    // 0 when no answer came (timeout, refused)
	Err        string // what went wrong; "" on success
	Status     string // the delivery's new status
	NextAt     time.Time
}

// RecordAttempt writes an attempt's outcome onto its delivery.
func (s *Store) RecordAttempt(ctx context.Context, id int64, a Attempt) error {
	var httpStatus *int
	if a.HTTPStatus != 0 {
		httpStatus = &a.HTTPStatus
	}
	var deliveredAt *time.Time
	if a.Status == DeliveryDelivered {
		deliveredAt = &a.At
	}
	_, err := s.db.Exec(ctx, `
		UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = $2, last_status = $3,
		       last_error = $4, status = $5, next_attempt_at = $6, delivered_at = $7
		WHERE id = $1`, id, a.At, httpStatus, a.Err, a.Status, a.NextAt, deliveredAt)
	return wrap("record attempt", err)
}

// LastNotifiedVersion returns the newest analysis version an
// analysis.ready or cause.changed delivery of the incident was queued
// for, or ErrNotFound.
func (s *Store) LastNotifiedVersion(ctx context.Context, incidentID int64) (int, error) {
	var v *int
	err := s.db.QueryRow(ctx, `SELECT max(analysis_version) FROM webhook_deliveries
		WHERE incident_id = $1 AND event IN ('analysis.ready', 'cause.changed')`, incidentID).Scan(&v)
	if err != nil {
		return 0, wrap("last notified version", err)
	}
	if v == nil {
		return 0, ErrNotFound
	}
	return *v, nil
}

// AnalysisTopCause returns a version's top cause category ("" when it
// has none), from the column kept for it, or ErrNotFound.
func (s *Store) AnalysisTopCause(ctx context.Context, incidentID int64, version int) (string, error) {
	var top string
	err := s.db.QueryRow(ctx, `SELECT top_cause FROM analyses WHERE incident_id = $1 AND version = $2`, incidentID, version).Scan(&top)
	return top, wrap("analysis top cause", err)
}

// NewestReadyTopCause returns the top cause of the incident's newest
// ready version, or ErrNotFound.
func (s *Store) NewestReadyTopCause(ctx context.Context, incidentID int64) (string, error) {
	var top string
	err := s.db.QueryRow(ctx, `SELECT top_cause FROM analyses WHERE incident_id = $1 AND status = 'ready'
		ORDER BY version DESC LIMIT 1`, incidentID).Scan(&top)
	return top, wrap("newest ready top cause", err)
}

// PauseWebhook keeps every delivery of a webhook from being claimed
// before until (ClaimDueDelivery), by any replica: its receiver is
// struggling — it gave no answer, or an error answer after a long wait,
// and each of its deliveries would hold a sender for about the timeout,
// one after another, while other receivers wait — or it asked for quiet
// (429, Retry-After), which each of them would draw again. A pause only ever
// lengthens; deliveries queued during it wait too, and no attempt is
// spent on them.
func (s *Store) PauseWebhook(ctx context.Context, webhookID int64, until time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE webhooks SET paused_until = GREATEST(paused_until, $2) WHERE id = $1`, webhookID, until)
	return wrap("pause webhook", err)
}

// FirstReadyAnalysis returns the lowest version of an incident's analysis
// that finished ready, or ErrNotFound.
func (s *Store) FirstReadyAnalysis(ctx context.Context, incidentID int64) (int, error) {
	var v *int
	err := s.db.QueryRow(ctx, `SELECT min(version) FROM analyses WHERE incident_id = $1 AND status = 'ready'`, incidentID).Scan(&v)
	if err != nil {
		return 0, wrap("first ready analysis", err)
	}
	if v == nil {
		return 0, ErrNotFound
	}
	return *v, nil
}
