package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// tokenCache keeps recent token lookups for a short time so that a burst of
// API calls does not become a burst of database reads. It serves only
// while the server hears revocations (Server.WatchAuth: 'waterline token
// revoke' on any host announces them through Postgres), and each one
// empties it, so a revoked token is refused at once, not within the TTL.
// The TTL runs on the real clock, not the server's injected one.
type tokenCache struct {
	mu      sync.Mutex
	on      bool   // revocations are heard: the cache may serve
	gen     uint64 // bumped by every reset: a lookup begun before one is not kept
	entries map[string]tokenCacheEntry
}

type tokenCacheEntry struct {
	tok     store.Token
	expires time.Time
}

const tokenCacheTTL = 5 * time.Second

// get returns a cached token, and the generation a lookup made now must
// hand back to put.
func (tc *tokenCache) get(secret string, now time.Time) (store.Token, uint64, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e, ok := tc.entries[secret]
	if !ok || !tc.on || now.After(e.expires) {
		delete(tc.entries, secret)
		return store.Token{}, tc.gen, false
	}
	return e.tok, tc.gen, true
}

func (tc *tokenCache) put(secret string, tok store.Token, now time.Time, gen uint64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if !tc.on || gen != tc.gen {
		return // not heard, or a revocation came while it was looked up
	}
	if tc.entries == nil || len(tc.entries) > 10000 {
		tc.entries = map[string]tokenCacheEntry{}
	}
	tc.entries[secret] = tokenCacheEntry{tok: tok, expires: now.Add(tokenCacheTTL)}
}

// reset empties the cache; on says whether revocations are heard.
func (tc *tokenCache) reset(on bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.on, tc.entries = on, nil
	tc.gen++
}

// tokenVerdicts remembers, by the secret's SHA-256, what the store said
// of tokens presented here, so the failed-authentication limit falls on
// guessing and nowhere else. A secret found unknown or revoked never
// becomes valid (tokens are created with fresh random secrets), so it is
// refused again without a lookup and without taking from its address's
// bucket: one integration retrying a revoked token behind a proxy used
// the proxy's bucket up and locked every other client out. A secret found
// valid is looked up even while its address is limited; the store still
// decides (it may have been revoked since).
type tokenVerdicts struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]tokenVerdict
}

type tokenVerdict int8

const (
	tokenUnseen tokenVerdict = iota
	tokenGood
	tokenBad
)

// maxTokenVerdicts bounds the memory (about 60 bytes an entry); a full map
// is emptied: forgotten secrets are only looked up again.
const maxTokenVerdicts = 20000

func (v *tokenVerdicts) get(sum [sha256.Size]byte) tokenVerdict {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[sum]
}

func (v *tokenVerdicts) set(sum [sha256.Size]byte, verdict tokenVerdict) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxTokenVerdicts {
		v.m = map[[sha256.Size]byte]tokenVerdict{}
	}
	v.m[sum] = verdict
}

// authHeartbeat is how often a quiet revocation listener checks that its
// connection is alive: a dead one is noticed within twice this, and the
// caches stop serving.
const authHeartbeat = 10 * time.Second

// WatchAuth keeps the token and session caches in step with revocations
// and logouts on every replica, until ctx ends: they serve only while it
// listens. Without it, every request looks its token up.
func (s *Server) WatchAuth(ctx context.Context) error {
	heard := false
	return s.store.WatchAuth(ctx, time.Second, authHeartbeat, func(on bool) {
		s.tokens.reset(on)
		s.pages.ResetSessions(on)
		if heard && !on && ctx.Err() == nil {
			s.log.Warn("auth: not hearing revocations; tokens and sessions are looked up on every request until the database is back")
		}
		heard = on
	}, func() {
		s.tokens.reset(true)
		s.pages.ResetSessions(true)
	})
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) string {
	h := r.Header.Get(echo.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// authenticate resolves the request's API token. It returns ok=false when
// there is no token or it is unknown or revoked.
func (s *Server) authenticate(c echo.Context) (store.Token, bool, error) {
	secret := bearer(c.Request())
	if secret == "" {
		return store.Token{}, false, nil
	}
	tok, gen, ok := s.tokens.get(secret, time.Now())
	if ok {
		return tok, true, nil
	}
	sum := sha256.Sum256([]byte(secret))
	seen := s.verdicts.get(sum)
	if seen == tokenBad {
		return store.Token{}, false, nil
	}
	k := clientKey(c.Request())
	if seen != tokenGood {
		if w := s.failures.wait(k, time.Now()); w > 0 {
			return store.Token{}, false, tooManyFailures(c, w)
		}
	}
	tok, err := s.store.LookupToken(c.Request().Context(), secret)
	if errors.Is(err, store.ErrNotFound) {
		s.verdicts.set(sum, tokenBad)
		s.failures.fail(k, time.Now())
		return store.Token{}, false, nil
	}
	if err != nil {
		return store.Token{}, false, err
	}
	s.verdicts.set(sum, tokenGood)
	s.tokens.put(secret, tok, time.Now(), gen)
	// Last use is bookkeeping for 'waterline token list': a failure is
	// logged, never the request's.
	if err := s.store.TouchToken(c.Request().Context(), tok.ID, s.now()); err != nil {
		s.log.Warn("token: recording last use", "token", tok.Name, "err", err)
	}
	return tok, true, nil
}

// requireScope rejects requests without a token (401) or with a token of
// too small a scope (403).
func (s *Server) requireScope(need store.TokenScope) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			tok, ok, err := s.authenticate(c)
			if err != nil {
				return err
			}
			if !ok {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="waterline"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "missing or invalid API token: send Authorization: Bearer <token> (create one with 'waterline token create')")
			}
			if !tok.Scope.Allows(need) {
				return echo.NewHTTPError(http.StatusForbidden, "token scope "+string(tok.Scope)+" cannot do this; needs "+string(need))
			}
			c.Set("token", tok)
			return next(c)
		}
	}
}
