package webhook

import (
	"net/http"
	"testing"
	"time"
)

// Retry-After is delay-seconds or an HTTP-date (RFC 9110 §10.2.3). A
// receiver (or the gateway in front of it) that asked for ten minutes'
// quiet with a date was read as asking for nothing: it was hit again
// after the 2.5–5 s backoff, spending attempts on more 429s.
func TestRetryAfterReadsBothForms(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		v        string
		min, max time.Duration
	}{
		{"120", 2 * time.Minute, 2 * time.Minute},
		{now.Add(10 * time.Minute).UTC().Format(http.TimeFormat), 10*time.Minute - 5*time.Second, 10 * time.Minute},
		{now.Add(-time.Minute).UTC().Format(http.TimeFormat), 0, 0}, // past: no wait
		{"", 0, 0},
		{"soon", 0, 0},
		{"-5", 0, 0},
	} {
		h := http.Header{}
		if c.v != "" {
			h.Set("Retry-After", c.v)
		}
		if got := retryAfter(h); got < c.min || got > c.max {
			t.Errorf("Retry-After %q: %v, want %v–%v", c.v, got, c.min, c.max)
		}
	}
}
