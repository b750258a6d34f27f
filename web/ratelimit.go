package web

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Failed sign-ins and failed API authentications are limited per client
// address with a token bucket: a burst of failBurst, then failRate per
// second. Once an address has used its bucket up, its sign-ins and its
// API requests with a token never seen valid get 429 with Retry-After,
// without a database lookup; tokens seen valid keep working (looked up as
// ever), and a token already refused (unknown or revoked) is refused again
// without using the bucket (tokenVerdicts): the limit falls on guessing,
// not on one client retrying a stale token. The address is the connection's peer
// (X-Forwarded-For is not trusted: anyone can send it), so behind a
// reverse proxy clients share the proxy's bucket; IPv6 clients are
// grouped by /64.
const (
	failBurst    = 20
	failRate     = 1.0 // per second
	maxLimitKeys = 50000
)

type failLimiter struct {
	mu sync.Mutex
	m  map[netip.Prefix]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// refill brings b up to date at now.
func (b *bucket) refill(now time.Time) {
	b.tokens = math.Min(failBurst, b.tokens+now.Sub(b.last).Seconds()*failRate)
	b.last = now
}

// clientKey is the limiter's key for a request: the peer's address, or
// its /64 for IPv6.
func clientKey(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// wait is how long the client must wait before its next failure may be
// answered (0: it may try now).
func (l *failLimiter) wait(k netip.Prefix, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[k]
	if !ok && len(l.m) >= maxLimitKeys {
		b, ok = l.m[overflowKey] // a new client while the map is full
	}
	if !ok {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / failRate * float64(time.Second))
}

// fail takes one token of the client's bucket.
func (l *failLimiter) fail(k netip.Prefix, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[netip.Prefix]*bucket{}
	}
	b, ok := l.m[k]
	if !ok {
		if len(l.m) >= maxLimitKeys {
			l.prune(now)
		}
		if len(l.m) >= maxLimitKeys {
			k = overflowKey
			b, ok = l.m[k]
		}
		if !ok {
			b = &bucket{tokens: failBurst, last: now}
			l.m[k] = b
		}
	}
	b.refill(now)
	b.tokens = math.Max(0, b.tokens-1)
}

// overflowKey is the one bucket new clients share while the map is full
// of clients still failing: dropping them all (as before) let anyone with
// 50,000 addresses — a /48 of IPv6 has 65,536 /64s — reset everyone's
// count, their own included, and guess on.
var overflowKey = netip.Prefix{}

// prune drops buckets that are full again.
func (l *failLimiter) prune(now time.Time) {
	for k, b := range l.m {
		if b.refill(now); b.tokens >= failBurst {
			delete(l.m, k)
		}
	}
}

// tooManyFailures is the 429 for a client out of tokens.
func tooManyFailures(c echo.Context, wait time.Duration) error {
	secs := int(math.Ceil(wait.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, secs)))
	return echo.NewHTTPError(http.StatusTooManyRequests,
		fmt.Sprintf("too many failed sign-ins or unknown API tokens from your address; retry in %d s", max(1, secs)))
}

// limitLogins guards POST /login: a client out of tokens gets 429, and
// every attempt that does not sign in takes a token. As for the API, a
// token this server has seen valid is still looked up while its address
// is limited (the store decides): the address is often a proxy's or a
// NAT's, and one guesser behind it kept everyone else from signing in.
// It runs behind the sign-in gate, which bounds and paces the form.
func (s *Server) limitLogins(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		k := clientKey(c.Request())
		sum := sha256.Sum256([]byte(strings.TrimSpace(c.FormValue("token"))))
		if s.verdicts.get(sum) != tokenGood {
			if w := s.failures.wait(k, time.Now()); w > 0 {
				return tooManyFailures(c, w)
			}
		}
		err := next(c)
		if err != nil || c.Response().Status != http.StatusSeeOther {
			s.failures.fail(k, time.Now())
		} else {
			s.verdicts.set(sum, tokenGood)
		}
		return err
	}
}
