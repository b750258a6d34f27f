package web

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// tokenCache keeps recent token lookups for a short time so that a burst of
// API calls does not become a burst of database reads. Revocation
// ('waterline token revoke', which every replica reads from the database)
// takes effect within tokenCacheTTL. The TTL runs on the real clock, not
// the server's injected one.
type tokenCache struct {
	mu      sync.Mutex
	entries map[string]tokenCacheEntry
}

type tokenCacheEntry struct {
	tok     store.Token
	expires time.Time
}

const tokenCacheTTL = 5 * time.Second

func (tc *tokenCache) get(secret string, now time.Time) (store.Token, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e, ok := tc.entries[secret]
	if !ok || now.After(e.expires) {
		delete(tc.entries, secret)
		return store.Token{}, false
	}
	return e.tok, true
}

func (tc *tokenCache) put(secret string, tok store.Token, now time.Time) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.entries == nil || len(tc.entries) > 10000 {
		tc.entries = map[string]tokenCacheEntry{}
	}
	tc.entries[secret] = tokenCacheEntry{tok: tok, expires: now.Add(tokenCacheTTL)}
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
	if tok, ok := s.tokens.get(secret, time.Now()); ok {
		return tok, true, nil
	}
	k := clientKey(c.Request())
	if w := s.failures.wait(k, time.Now()); w > 0 {
		return store.Token{}, false, tooManyFailures(c, w)
	}
	tok, err := s.store.LookupToken(c.Request().Context(), secret)
	if errors.Is(err, store.ErrNotFound) {
		s.failures.fail(k, time.Now())
		return store.Token{}, false, nil
	}
	if err != nil {
		return store.Token{}, false, err
	}
	s.tokens.put(secret, tok, time.Now())
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
