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

// retryAfter reads a Retry-After header given in seconds (the HTTP-date
// form is rare from webhook receivers and ignored).
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}
