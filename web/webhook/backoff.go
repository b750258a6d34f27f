package webhook

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// backoff is how long to wait before attempt n+1 after n failed ones:
// base·2^(n−1), capped at max, with "equal jitter" (half fixed, half
// random) so that many deliveries failing together — a receiver down —
// do not all come back at the same instant.
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + rand.N(half+1)
}

// retryable reports whether an HTTP answer is worth trying again: server
// errors, 408 Request Timeout and 429 Too Many Requests. Other 4xx mean
// the request itself is wrong (bad URL, bad credentials, rejected body);
// sending it again would fail the same way.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// retryAfter reads a Retry-After header, in either of its forms (RFC
// 9110 §10.2.3): delay-seconds, or an HTTP-date (from the wall clock, as
// the receiver's is). 0 when absent, unreadable or past.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
