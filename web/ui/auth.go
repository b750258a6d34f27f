package ui

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// Browser auth. The UI is reached either through an auth proxy that sets a
// trusted user header (only when Config.AuthProxyHeader names it: a header
// anyone can send is trusted only when the operator says a proxy strips
// it), or by pasting an API token on /login, which starts a session held
// in an HttpOnly, SameSite=Lax cookie. A proxy user needs no cookie: one
// session row per user carries their CSRF token and the scope
// WATERLINE_AUTH_PROXY_SCOPE gives them (read by default). Every POST
// must echo the CSRF token (form field csrf or header X-CSRF-Token, which
// htmx sends via hx-headers). API routes keep
// bearer tokens and need no CSRF (a browser cannot attach a bearer token
// cross-site).

const (
	sessionCookie    = "wl_session"
	loginCSRFCookie  = "wl_login"
	sessionTTL       = 12 * time.Hour
	sessionCacheTTL  = 5 * time.Second // on the real clock; the cache serves only while logouts and revocations are heard (ResetSessions)
	csrfHeader       = "X-CSRF-Token"
	userKey          = "ui_user"
	proxySessionName = "proxy:"
)

// user is the signed-in browser user of a request.
type user struct {
	Name    string
	Scope   store.TokenScope
	CSRF    string
	Proxied bool // vouched for by the auth proxy's header
}

func userOf(c echo.Context) (user, bool) {
	u, ok := c.Get(userKey).(user)
	return u, ok
}

// sessionCache keeps session lookups for a short time, keyed by the
// secret's hash. Like the API's token cache it serves only while logouts
// and revocations are heard (ResetSessions), and each one empties it.
type sessionCache struct {
	mu  sync.Mutex
	on  bool
	gen uint64
	m   map[[32]byte]sessionCacheEntry
}

type sessionCacheEntry struct {
	se      store.Session
	expires time.Time
}

func (sc *sessionCache) get(k [32]byte, now time.Time) (store.Session, uint64, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e, ok := sc.m[k]
	if !ok || !sc.on || time.Now().After(e.expires) || now.After(e.se.ExpiresAt) {
		delete(sc.m, k)
		return store.Session{}, sc.gen, false
	}
	return e.se, sc.gen, true
}

func (sc *sessionCache) put(k [32]byte, se store.Session, now time.Time, gen uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.on || gen != sc.gen {
		return
	}
	if sc.m == nil || len(sc.m) > 10000 {
		sc.m = map[[32]byte]sessionCacheEntry{}
	}
	sc.m[k] = sessionCacheEntry{se: se, expires: time.Now().Add(sessionCacheTTL)}
}

func (sc *sessionCache) drop(k [32]byte) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	delete(sc.m, k)
}

// ResetSessions empties the session cache after a logout or revocation
// anywhere; on says whether those are heard (the cache serves only then).
func (p *Pages) ResetSessions(on bool) {
	p.sessions.mu.Lock()
	defer p.sessions.mu.Unlock()
	p.sessions.on, p.sessions.m = on, nil
	p.sessions.gen++
}

// session returns the request's live session, if its cookie names one.
func (p *Pages) session(c echo.Context) (store.Session, string, bool, error) {
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 100 {
		return store.Session{}, "", false, nil
	}
	now := p.now()
	k := store.SessionSecretHash(ck.Value)
	se, gen, ok := p.sessions.get(k, now)
	if ok {
		return se, ck.Value, true, nil
	}
	se, err = p.store.LookupSession(c.Request().Context(), ck.Value, now)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, "", false, nil
	}
	if err != nil {
		return store.Session{}, "", false, err
	}
	p.sessions.put(k, se, now, gen)
	return se, ck.Value, true, nil
}

// setSessionCookie gives the browser the session's remaining lifetime as
// Max-Age, never as an Expires date: the browser counts Max-Age on its own
// clock, so a client whose clock disagrees with the server's (skew, or a
// test browser next to a test clock) neither drops the cookie at once nor
// keeps it too long. The server checks expiry itself anyway.
func (p *Pages) setSessionCookie(c echo.Context, secret string, expires time.Time) {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: secret, Path: "/", MaxAge: max(1, int(expires.Sub(p.now()).Seconds())), HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(p.cfg.PublicURL, "https://")})
}

// RequireSession admits browsers with a session (or a trusted proxy user)
// whose scope allows need, and checks the CSRF token on every unsafe
// method. Without a session a GET is sent to /login (htmx gets
// HX-Redirect).
func (p *Pages) RequireSession(need store.TokenScope) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u, ok, err := p.identify(c)
			if err != nil {
				return err
			}
			req := c.Request()
			if !ok {
				if req.Method != http.MethodGet {
					return echo.NewHTTPError(http.StatusUnauthorized, "sign in first")
				}
				next := req.URL.RequestURI()
				if req.Header.Get(hxRequest) == "true" {
					// A fragment's URL is no page to come back to (a poll's
					// is a bare banner): the page the browser shows is.
					next = "/"
					if cu, err := url.Parse(req.Header.Get("HX-Current-URL")); err == nil && cu.Path != "" {
						next = cu.RequestURI()
					}
				}
				to := "/login?next=" + url.QueryEscape(next)
				if req.Header.Get(hxRequest) == "true" {
					c.Response().Header().Set("HX-Redirect", to)
					return c.NoContent(http.StatusUnauthorized)
				}
				return c.Redirect(http.StatusSeeOther, to)
			}
			c.Set(userKey, u)
			if !u.Scope.Allows(need) {
				return echo.NewHTTPError(http.StatusForbidden, "your sign-in has scope "+string(u.Scope)+"; this needs "+string(need))
			}
			if req.Method != http.MethodGet && req.Method != http.MethodHead && !validCSRF(c, u.CSRF) {
				return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
			}
			return next(c)
		}
	}
}

func validCSRF(c echo.Context, want string) bool {
	got := c.Request().Header.Get(csrfHeader)
	if got == "" {
		got = c.FormValue("csrf")
	}
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// identify finds who the browser is: the trusted proxy header when one
// is configured and sent, else the session cookie.
func (p *Pages) identify(c echo.Context) (user, bool, error) {
	if h := p.cfg.AuthProxyHeader; h != "" {
		if name := strings.TrimSpace(c.Request().Header.Get(h)); name != "" {
			if request.CheckText(name, request.MaxLabelLen) != "" || strings.ContainsFunc(name, unicode.IsControl) {
				return user{}, false, nil
			}
			// The proxy vouches for the user on every request; the user's
			// one session row (shared by all their browsers and
			// cookie-less requests) only carries the CSRF token and the
			// scope the operator gives proxy users.
			se, err := p.proxySession(c, name)
			if err != nil {
				return user{}, false, err
			}
			return user{Name: name, Scope: se.Scope, CSRF: se.CSRF, Proxied: true}, true, nil
		}
	}
	se, _, ok, err := p.session(c)
	if err != nil {
		return user{}, false, err
	}
	if !ok || se.TokenID == nil {
		// A proxy session is worth nothing without the proxy's header.
		return user{}, false, nil
	}
	return user{Name: se.User, Scope: se.Scope, CSRF: se.CSRF}, true, nil
}

// proxySession is a proxy user's session, cached like cookie sessions.
func (p *Pages) proxySession(c echo.Context, name string) (store.Session, error) {
	now := p.now()
	k := sha256.Sum256([]byte("proxy\x00" + name))
	se, gen, ok := p.sessions.get(k, now)
	if ok {
		return se, nil
	}
	se, err := p.store.ProxySession(c.Request().Context(), proxySessionName+name, cmp.Or(p.cfg.AuthProxyScope, store.ScopeRead), sessionTTL, now)
	if err != nil {
		return store.Session{}, err
	}
	p.sessions.put(k, se, now, gen)
	return se, nil
}

// safeNext keeps a post-login redirect on this site: only a path (with an
// optional query and fragment) on this host, never anything a browser
// could read as another host. Browsers strip tabs and newlines from URLs
// and treat a backslash as a slash, so "/\t/evil.example" and
// "/\\evil.example" are protocol-relative URLs to them; so the value must
// be printable ASCII without a backslash (the query parameter it came in
// is already decoded once; non-ASCII look-alike slashes are refused too),
// parse as a URL with no scheme, host or user, and its path, decoded,
// must still start with exactly one slash and hold no backslash or
// control character.
func safeNext(next string) string {
	if !isSafeNext(next) {
		return "/"
	}
	return next
}

func isSafeNext(next string) bool {
	if len(next) == 0 || len(next) > 2048 || next[0] != '/' {
		return false
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x21 || c > 0x7e || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	if !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || strings.HasPrefix(u.RawPath, "//") {
		return false
	}
	for _, c := range u.Path {
		if c < 0x20 || c == 0x7f || c == '\\' || c > 0x7e {
			return false
		}
	}
	return true
}

// ShowLogin is GET /login. The form's CSRF token is a random value
// also set as a cookie (there is no session yet to bind it to).
func (p *Pages) ShowLogin(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if _, ok, err := p.identify(c); err == nil && ok {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return p.loginPage(c, http.StatusOK, next, "")
}

func (p *Pages) loginPage(c echo.Context, status int, next, msg string) error {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	c.SetCookie(&http.Cookie{Name: loginCSRFCookie, Value: tok, Path: "/login", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: strings.HasPrefix(p.cfg.PublicURL, "https://"), MaxAge: 3600})
	return render(c, status, views.Layout(views.Page{Title: "Sign in", Nav: "login"}, views.LoginBody(tok, next, msg)))
}

// Login is POST /login: an API token with read scope or more starts
// a session.
func (p *Pages) Login(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	ck, err := c.Cookie(loginCSRFCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(c.FormValue("csrf"))) != 1 {
		return p.loginPage(c, http.StatusForbidden, next, "The form expired (CSRF check failed); please try again.")
	}
	secret := strings.TrimSpace(c.FormValue("token"))
	tok, err := p.store.LookupToken(c.Request().Context(), secret)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !tok.Scope.Allows(store.ScopeRead)) {
		return p.loginPage(c, http.StatusUnauthorized, next, "Unknown or revoked token.")
	}
	if err != nil {
		return err
	}
	id := tok.ID
	sec, se, err := p.store.CreateSession(c.Request().Context(), tok.Name, tok.Scope, &id, sessionTTL, p.now())
	if err != nil {
		return err
	}
	p.setSessionCookie(c, sec, se.ExpiresAt)
	c.SetCookie(&http.Cookie{Name: loginCSRFCookie, Value: "", Path: "/login", MaxAge: -1})
	return c.Redirect(http.StatusSeeOther, next)
}

// Logout is POST /logout. A live session must echo its CSRF token (no
// other site may sign the user out); a dead or missing one is only
// cleared: behind RequireSession, Sign out on a page left open past the
// session's end answered "401 sign in first" and kept the dead cookie.
func (p *Pages) Logout(c echo.Context) error {
	se, _, live, err := p.session(c)
	if err != nil {
		return err
	}
	if live {
		if !validCSRF(c, se.CSRF) {
			return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
		}
		ck, _ := c.Cookie(sessionCookie)
		p.sessions.drop(store.SessionSecretHash(ck.Value))
		if err := p.store.DeleteSession(c.Request().Context(), ck.Value, p.now()); err != nil {
			return err
		}
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusSeeOther, "/login")
}
