package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/webhook"
	"github.com/waterline-dev/waterline/wire"
)

// webhookView is a webhook on the wire: a password in the URL (basic auth
// for Jira or ServiceNow) and every query-string value (?api_key=…) are
// masked, and the secret is never shown.
//
// paused_until is shown while the receiver's pause lasts (at now): why
// its deliveries wait.
func webhookView(w store.Webhook, now time.Time) wire.Webhook {
	v := wire.Webhook{ID: w.ID, URL: maskURL(w.URL), Format: w.Format, Events: w.Events, CreatedAt: w.CreatedAt, IncludeShareLink: w.IncludeShareLink}
	if w.PausedUntil != nil && w.PausedUntil.After(now) {
		v.PausedUntil = w.PausedUntil
	}
	return v
}

// maskURL hides a URL's password and its query values, keeping the names.
// A user name without a password (https://token@host/) and a bare query
// key (?token) are credentials themselves, and are hidden whole, and so
// are the path segments that may be (maskPath).
func maskURL(raw string) string {
	p, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	p.RawPath = maskPath(p.Hostname(), p.EscapedPath())
	p.Path, _ = url.PathUnescape(p.RawPath)
	if p.User != nil {
		if _, hasPassword := p.User.Password(); !hasPassword {
			p.User = url.User("xxxxx")
		}
	}
	if p.RawQuery != "" {
		parts := strings.Split(p.RawQuery, "&")
		for i, kv := range parts {
			if k, _, ok := strings.Cut(kv, "="); ok {
				parts[i] = k + "=xxxxx"
			} else if kv != "" {
				parts[i] = "xxxxx"
			}
		}
		p.RawQuery = strings.Join(parts, "&")
	}
	return p.Redacted()
}

// pathIsCredential are the hosts of incoming webhooks whose path past its
// first segment is the credential itself (Slack's /services/T…/B…/token,
// Discord's /api/webhooks/id/token, Teams' /webhookb2/…, Mattermost's
// /hooks/id).
var pathIsCredential = []string{"hooks.slack.com", "discord.com", "discordapp.com", "webhook.office.com", "outlook.office.com"}

// plainSegment is a path segment no receiver makes a secret of: a word,
// perhaps with a version digit (remotelink, jsonv2, v1), a short number
// (an API version) or a ticket key (OPS-7).
var plainSegment = regexp.MustCompile(`^([A-Za-z][A-Za-z._-]{0,19}[0-9]?|[0-9]{1,4}|[A-Z][A-Z0-9]{0,9}-[0-9]{1,7})$`)

// maskPath hides the path segments of an escaped path that may carry a
// credential: every one past the first on hosts whose incoming webhooks
// put it there, elsewhere every one that is neither a word, a short
// number nor a ticket key (a token, an id, a hash).
func maskPath(host, path string) string {
	host = strings.ToLower(host)
	whole := false
	for _, h := range pathIsCredential {
		whole = whole || host == h || strings.HasSuffix(host, "."+h)
	}
	segs := strings.Split(path, "/")
	first := true
	for i, seg := range segs {
		if seg == "" {
			continue
		}
		if (whole && !first) || (!whole && !plainSegment.MatchString(seg)) {
			segs[i] = "xxxxx"
		}
		first = false
	}
	return strings.Join(segs, "/")
}

// Limits of a webhook registration.
const (
	maxWebhookBody   = 16 << 10
	maxWebhookURL    = 2000
	minWebhookSecret = 16
	maxWebhookSecret = 256
)

// CreateWebhook is POST /api/v1/webhooks (admin): register a receiver →
// 201 with the webhook, without its secret.
func (a *API) CreateWebhook(c echo.Context) error {
	var w wire.WebhookCreate
	if err := ingest.ReadObject(c.Response(), c.Request(), maxWebhookBody, &w, `{"url", "secret", "format"?, "events"?, "include_share_link"?}`); err != nil {
		return err
	}
	n, err := checkWebhook(w, a.cfg.WebhookAllowPrivate)
	if err != nil {
		return err
	}
	hook, created, err := a.store.CreateWebhookOnce(c.Request().Context(), n)
	var exists *store.WebhookExistsError
	switch {
	case errors.As(err, &exists):
		return &request.Error{Status: http.StatusConflict, Field: "url", Msg: exists.Error()}
	case err != nil:
		return err
	case !created: // a retry: the webhook it made
		return c.JSON(http.StatusOK, webhookView(hook, a.now()))
	}
	return c.JSON(http.StatusCreated, webhookView(hook, a.now()))
}

// checkWebhook validates a registration and fills defaults: format
// waterline, every event. A host that is a blocked address (or a number
// in an odd spelling) is refused here; names are checked on every
// connection (webhook.NewClient).
func checkWebhook(w wire.WebhookCreate, allowPrivate bool) (store.NewWebhook, error) {
	u, err := url.Parse(strings.TrimSpace(w.URL))
	switch {
	case w.URL == "":
		return store.NewWebhook{}, request.Invalid("url", "required: the receiver's http(s) URL")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return store.NewWebhook{}, request.Invalid("url", "want an absolute http(s) URL, got %q", w.URL)
	case len(w.URL) > maxWebhookURL:
		return store.NewWebhook{}, request.Invalid("url", "longer than %d bytes", maxWebhookURL)
	}
	if msg := webhook.CheckURL(u, allowPrivate); msg != "" {
		return store.NewWebhook{}, request.Invalid("url", "%s", msg)
	}
	if msg := request.CheckText(w.Secret, maxWebhookSecret); msg != "" {
		return store.NewWebhook{}, request.Invalid("secret", "%s", msg)
	}
	if len(w.Secret) < minWebhookSecret || len(w.Secret) > maxWebhookSecret {
		return store.NewWebhook{}, request.Invalid("secret", "want %d to %d characters (the HMAC-SHA256 key receivers verify signatures with), got %d",
			minWebhookSecret, maxWebhookSecret, len(w.Secret))
	}
	format := w.Format
	if format == "" {
		format = store.WebhookFormatWaterline
	}
	if format != store.WebhookFormatWaterline && format != store.WebhookFormatJira && format != store.WebhookFormatServiceNow &&
		format != store.WebhookFormatSlack {
		return store.NewWebhook{}, request.Invalid("format", "want waterline, jira, servicenow or slack, got %q", w.Format)
	}
	events := w.Events
	if len(events) == 0 {
		events = store.WebhookEvents
	}
	var uniq []string
	for i, e := range events {
		if !slices.Contains(store.WebhookEvents, e) {
			return store.NewWebhook{}, request.Invalid("events["+strconv.Itoa(i)+"]", "want one of %s, got %q", strings.Join(store.WebhookEvents, ", "), e)
		}
		if !slices.Contains(uniq, e) {
			uniq = append(uniq, e)
		}
	}
	return store.NewWebhook{URL: u.String(), Secret: w.Secret, Format: format, Events: uniq, IncludeShareLink: w.IncludeShareLink}, nil
}

// ListWebhooks is GET /api/v1/webhooks (admin).
func (a *API) ListWebhooks(c echo.Context) error {
	hooks, err := a.store.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	out := wire.WebhookList{Webhooks: make([]wire.Webhook, len(hooks))}
	for i, h := range hooks {
		out.Webhooks[i] = webhookView(h, a.now())
	}
	return c.JSON(http.StatusOK, out)
}

// DeleteWebhook is DELETE /api/v1/webhooks/{id} (admin) → 204; its
// pending deliveries are dropped with it.
func (a *API) DeleteWebhook(c echo.Context, id int64) error {
	if err := a.store.DeleteWebhook(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// ListDeliveries is GET /api/v1/webhooks/{id}/deliveries?limit=&cursor=
// (admin): the delivery log, newest first.
func (a *API) ListDeliveries(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	if _, err := a.store.WebhookByID(ctx, id); err != nil {
		return err
	}
	limit, err := request.Limit(c.QueryParams(), 50, 500)
	if err != nil {
		return err
	}
	list, next, err := a.store.Deliveries(ctx, id, c.QueryParam("cursor"), limit)
	if errors.Is(err, store.ErrBadDeliveryCursor) {
		return request.BadInput("cursor", "not a cursor from a previous page's next_cursor")
	}
	if err != nil {
		return err
	}
	out := wire.DeliveryPage{Deliveries: make([]wire.Delivery, len(list)), NextCursor: next}
	for i, d := range list {
		v := wire.Delivery{
			ID: d.ID, WebhookID: d.WebhookID, IncidentID: d.IncidentID, Event: d.Event, AnalysisVersion: d.AnalysisVersion,
			IdempotencyKey: d.IdempotencyKey, Status: d.Status, Attempts: d.Attempts, LastStatus: d.LastStatus,
			LastError: d.LastError, CreatedAt: d.CreatedAt, LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt,
			Payload: json.RawMessage(d.Body),
		}
		if d.Status == store.DeliveryPending {
			at := d.NextAttemptAt
			v.NextAttemptAt = &at
		}
		out.Deliveries[i] = v
	}
	return c.JSON(http.StatusOK, out)
}
