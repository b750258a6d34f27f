// Package webhook is Waterline's outbound webhooks. The Notifier decides
// what to say: told about incident changes and new analyses, it queues a
// delivery per subscribed webhook, its body already rendered in the
// webhook's format (Waterline, a Jira remote link or a ServiceNow event).
// The Dispatcher decides when: it claims due deliveries from Postgres
// (store), signs each body with the webhook's secret, POSTs it, and
// records the outcome — delivered, retried later with exponential backoff
// and jitter, or failed for good.
//
// A receiver checks a delivery like this (see Verify):
//
//	mac = HMAC-SHA256(secret, X-Waterline-Timestamp + "." + raw body)
//	X-Waterline-Signature == "sha256=" + hex(mac)     (constant-time compare)
//	|now − X-Waterline-Timestamp| ≤ 5 minutes          (replay window)
//
// and drops a delivery whose Idempotency-Key it has already processed:
// a delivery is sent at least once, and the key is the same on every retry.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The headers of every delivery.
const (
	// HeaderSignature is "sha256=" + hex HMAC-SHA256 over timestamp + "." + body.
	HeaderSignature = "X-Waterline-Signature"
	// HeaderTimestamp is when the attempt was sent, in Unix seconds.
	HeaderTimestamp = "X-Waterline-Timestamp"
	// HeaderEvent is the event: incident.opened, analysis.ready, cause.changed or incident.resolved.
	HeaderEvent = "X-Waterline-Event"
	// HeaderDelivery is the delivery's id in the log (GET /api/v1/webhooks/{id}/deliveries).
	HeaderDelivery = "X-Waterline-Delivery"
	// HeaderIdempotencyKey is stable per incident, event and analysis version.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Tolerance is how far a timestamp may be from the receiver's clock in
// Verify: long enough for clock skew, short enough that a captured
// delivery cannot be replayed later.
const Tolerance = 5 * time.Minute

// Sign returns the X-Waterline-Signature value for body sent at ts.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook: signature does not match")
	ErrStale        = errors.New("webhook: timestamp outside the tolerance")
)

// Verify checks a delivery as a receiver should: the signature over the
// timestamp and the raw body, compared in constant time, and a timestamp
// within Tolerance of now.
func Verify(secret, timestamp, signature string, body []byte, now time.Time) error {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(strings.TrimSpace(signature))) {
		return ErrBadSignature
	}
	return nil
}
