package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/web/request"
)

type ctxKey int

const requestIDKey ctxKey = iota

// clientCtxKey holds the server's context of the request, cancelled when
// the client goes away.
const clientCtxKey = "client_ctx"

// requestID returns the id the request was tagged with by withRequestID.
func requestID(c echo.Context) string {
	if v, ok := c.Get("request_id").(string); ok {
		return v
	}
	return ""
}

// withRequestID tags every request with an id (the client's X-Request-Id
// when it is sane, else a new one), echoes it back, and puts it in the
// context so log lines of one request can be found together.
func (s *Server) withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if id == "" || len(id) > 64 || strings.ContainsAny(id, " \t\r\n") {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		c.Set("request_id", id)
		c.Set(clientCtxKey, c.Request().Context())
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		ctx := context.WithValue(c.Request().Context(), requestIDKey, id)
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// withLogAndMetrics logs each request once and records its duration by
// route pattern (not raw path, to keep label cardinality bounded).
func (s *Server) withLogAndMetrics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // write the response now so the status is known
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		d := time.Since(start)
		method := methodLabel(c.Request().Method)
		s.metrics.requestDuration.WithLabelValues(method, route, strconv.Itoa(status)).Observe(d.Seconds())
		if route != "/healthz" && route != "/readyz" && route != "/metrics" && !strings.HasPrefix(route, "/static") {
			s.log.InfoContext(c.Request().Context(), "http", "request_id", requestID(c), "method", method,
				"path", logPath(c), "status", status, "ms", float64(d.Microseconds())/1000, "bytes", c.Response().Size)
		}
		return nil
	}
}

// methodLabel is a request's method as metrics and logs name it: the
// standard ones, else "other" — the method is the client's to choose, and
// each distinct one would be a series of its own, never freed.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// withTimeout bounds the request's context; handlers and the store honour
// it, so a stuck database cannot pin a request forever. Reading the body
// does not watch the context, so a read deadline bounds a client that
// uploads too slowly.
func (s *Server) withTimeout(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.RequestTimeout <= 0 {
			return next(c)
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.RequestTimeout)
		defer cancel()
		// Not every ResponseWriter supports deadlines (httptest's recorder
		// does not); the context still bounds the handler's own work.
		_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(s.cfg.RequestTimeout))
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// withPacedWrites bounds how long an answer may wait on a client that
// does not read it: nothing else does (the request's context does not
// interrupt a blocked write, and the server sets no write timeout), so a
// client that asked for a page and never read it held its handler — and
// a heavy-read slot, which is held while the answer is written — for as
// long as it kept the connection open. Like a body (pacedBody), each
// write may wait on the client BodyGrace plus one second per BodyMinRate
// bytes; past that it fails and the connection is closed.
func (s *Server) withPacedWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		w := &pacedWriter{ResponseWriter: res.Writer, rc: http.NewResponseController(res.Writer),
			grace: cmp.Or(s.cfg.BodyGrace, defaultBodyGrace), rate: float64(cmp.Or(s.cfg.BodyMinRate, defaultBodyMinRate))}
		res.Writer = w
		defer func() { res.Writer = w.ResponseWriter }()
		return next(c)
	}
}

// pacedWriter sets the connection's write deadline before each write.
type pacedWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	grace    time.Duration
	rate     float64   // bytes per second
	deadline time.Time // the one set last
}

func (w *pacedWriter) Write(b []byte) (int, error) {
	now := time.Now()
	need := time.Duration(float64(len(b)) / w.rate * float64(time.Second))
	// Small writes (a fragment, a header flush) reuse a deadline that
	// still leaves half the grace: no timer reset for each.
	if w.deadline.IsZero() || w.deadline.Before(now.Add(w.grace/2+need)) {
		w.deadline = now.Add(w.grace + need)
		_ = w.rc.SetWriteDeadline(w.deadline)
	}
	return w.ResponseWriter.Write(b)
}

func (w *pacedWriter) Flush() { _ = w.rc.Flush() }

func (w *pacedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wantsHTML reports whether the client is a browser (or htmx) rather than
// an API client, so errors can be rendered as a page or fragment.
func wantsHTML(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return false
	}
	return r.Header.Get("HX-Request") == "true" || strings.Contains(r.Header.Get("Accept"), "text/html")
}

// onceEach refuses an API query parameter given more than once: every one
// is single-valued, and the first value winning silently answered
// "status=open&status=bogus" with the open incidents.
func onceEach(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for k, vs := range c.QueryParams() {
			if len(vs) > 1 {
				return request.BadInput(k, "given %d times; give it once", len(vs))
			}
		}
		return next(c)
	}
}

// secretParams are path parameters that are capabilities (a share link's
// token): logs name the route, never the secret.
var secretParams = map[string]bool{"token": true}

// logPath is the request's path for logs, with secret segments redacted.
// A share path is redacted by its prefix too: one that matches no route
// (a trailing slash, a mangled paste) has no parameters to go by.
func logPath(c echo.Context) string {
	p := c.Request().URL.Path
	// Cleaned and case-folded for the check: "//s/…" and "/S/…" match no
	// route either.
	if clean := path.Clean("/" + p); len(clean) > 3 && strings.EqualFold(clean[:3], "/s/") {
		rest := clean[3:]
		_, after, more := strings.Cut(rest, "/")
		p = "/s/[redacted]"
		if more {
			p += "/" + after
		}
		return p
	}
	values := c.ParamValues()
	for i, name := range c.ParamNames() {
		if secretParams[name] && i < len(values) && values[i] != "" {
			p = strings.Replace(p, values[i], "[redacted]", 1)
		}
	}
	return p
}

// contentSecurityPolicy lets pages run scripts from this site only (htmx
// and app.js; no inline script, no eval: app.js turns htmx's eval off),
// and be framed by no one. Styles allow inline style attributes, which
// the server-drawn bars and timelines are positioned with; they cannot
// run code.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// withSecurityHeaders sets the headers every answer carries: the CSP, no
// framing (X-Frame-Options for browsers without frame-ancestors), no
// content sniffing, and no Referer leaving the site (a share link's
// token or an incident's filters in the URL stay here).
func (s *Server) withSecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

// cacheControl sets Cache-Control just before the answer is written,
// over whatever the handler chose: a route's caching is decided where
// the route is declared.
func cacheControl(v string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			res := c.Response()
			res.Before(func() {
				if res.Status < 400 {
					res.Header().Set("Cache-Control", v)
				}
			})
			return next(c)
		}
	}
}

// withUnescapedParams decodes path parameters. The router matches on the
// escaped path when there is one (so "a%2Fb" stays one segment) and hands
// parameters over still escaped; a request id holding a "/" arrives as
// %2F and must be looked up as "/".
func (s *Server) withUnescapedParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.RawPath != "" {
			vals := c.ParamValues()
			for i, v := range vals {
				if u, err := url.PathUnescape(v); err == nil {
					vals[i] = u
				}
			}
			c.SetParamValues(vals...)
		}
		// Text Postgres cannot hold (a NUL, bytes that are not UTF-8) is
		// the client's mistake: a 400 naming the parameter, or a 404 for a
		// path segment, which then names nothing — not the database's 500.
		for _, v := range c.ParamValues() {
			if !storable(v) {
				return &request.Error{Status: http.StatusNotFound, Msg: "not found"}
			}
		}
		for name, vs := range c.Request().URL.Query() {
			for _, v := range vs {
				if !storable(v) {
					return request.BadInput(name, "must be UTF-8 text without NUL characters")
				}
			}
		}
		return next(c)
	}
}

// storable says whether Postgres can take v as text.
func storable(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsRune(v, 0)
}
