package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
)

// routes lists Waterline's whole HTTP surface.
func (s *Server) routes(e *echo.Echo) {
	e.Use(s.withRequestID, s.withLogAndMetrics, s.withSecurityHeaders, s.withTimeout, s.withPacedWrites, s.withUnescapedParams)

	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.handleMetrics)
	e.GET("/api/openapi.json", s.handleOpenAPI)

	// JSON API: bearer tokens, read scope for GET, write for ingest and
	// incidents, admin for webhooks.
	a := s.api
	read := s.requireScope(store.ScopeRead)
	write := s.requireScope(store.ScopeWrite)
	admin := s.requireScope(store.ScopeAdmin)
	// Every route that reads a body goes through a gate (bodies.go):
	// bounded concurrency per kind, a slot only once the body flows, a
	// minimum transfer rate.
	g := s.gates
	samples, traces, ingest, small := s.gated(g.samples), s.gated(g.traces), s.gated(g.ingest), s.gated(g.small)
	signIn := s.gated(g.signIn)
	heavy := limitReads(s.heavy, heavyReadWait)
	// Every GET names the query parameters it takes (query): any other
	// is a 400 naming it, so a filter that is misspelt or another
	// endpoint's is never silently ignored.
	v1 := e.Group("/api/v1", onceEach)
	v1.POST("/events", a.CreateEvents, write, ingest)
	v1.POST("/samples", a.CreateSamples, write, samples)
	v1.POST("/alerts/alertmanager", a.ReceiveAlertmanager, write, stallsAsUnavailable, ingest)
	v1.POST("/incidents", a.CreateIncident, write, small)
	v1.GET("/incidents", a.ListIncidents, read, query("status", "source", "model", "from", "to", "cursor", "limit"))
	v1.GET("/incidents/:id", byID(a.GetIncident), read, query())
	v1.POST("/incidents/:id/resolve", byID(a.ResolveIncident), write, small)
	v1.POST("/incidents/:id/share", byID(a.CreateShareLink), write, small)
	v1.DELETE("/incidents/:id/share", byID(a.RevokeShareLink), write)
	v1.GET("/incidents/:id/analysis", byID(a.GetAnalysis), read, query("version"))
	v1.GET("/timeline", a.GetTimeline, read, query("from", "to", "model", "version", "tenant", "replica", "node", "step", "roles", "levels"), heavy)
	v1.GET("/spikes", a.ListSpikes, read,
		query("from", "to", "query", "step", "direction", "sensitivity", "level", "model", "version", "replica", "node"), heavy)
	v1.GET("/pull/status", a.GetPullStatus, read, query())
	v1.POST("/webhooks", a.CreateWebhook, admin, small)
	v1.GET("/webhooks", a.ListWebhooks, admin, query())
	v1.DELETE("/webhooks/:id", byID(a.DeleteWebhook), admin)
	v1.GET("/webhooks/:id/deliveries", byID(a.ListDeliveries), admin, query("limit", "cursor"))
	// Where other tools already send: OTLP/HTTP's standard path (an OTel
	// SDK or Collector points at the base URL) and Grafana's annotation
	// API (a CD step that annotates Grafana posts the same body).
	e.POST("/v1/traces", a.ExportTraces, write, traces)
	e.POST("/api/annotations", a.CreateAnnotation, write, ingest)
	e.PATCH("/api/annotations/:id", a.PatchAnnotation, write, ingest)
	e.PUT("/api/annotations/:id", a.ReplaceAnnotation, write, ingest)
	e.DELETE("/api/annotations/:id", a.DeleteAnnotation, write)

	// UI (htmx + templ). Pages need a browser session (or a trusted auth
	// proxy user); changes need write scope and a CSRF token (read from
	// the form, so the gate comes first). Share links
	// need neither: the token in the path is the capability.
	p := s.pages
	gz := middleware.GzipWithConfig(middleware.GzipConfig{Level: 5, MinLength: 1024})
	uiRead, uiWrite := p.RequireSession(store.ScopeRead), p.RequireSession(store.ScopeWrite)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", staticHandler())), gz)
	e.GET("/login", p.ShowLogin)
	e.POST("/login", p.Login, signIn, s.limitLogins) // the gate first: the limit reads the form
	e.POST("/logout", p.Logout, signIn)              // checks its own session and CSRF token: a dead session is only cleared
	e.GET("/", p.ShowHome, gz, uiRead)
	e.GET("/explore", p.ShowExplore, gz, uiRead, heavy)
	e.GET("/incidents/:id", byID(p.ShowIncident), uiRead, heavy) // cached pre-compressed per session (web/ui/pagecache.go)
	e.GET("/incidents/:id/status", byID(p.ShowIncidentStatus), uiRead)
	e.GET("/incidents/:id/samples/:rid", byID(p.ShowSample), gz, uiRead)
	// A signed-in user's answers are for that browser only: no shared
	// cache keeps them (and so serves them after a sign-out or revocation).
	e.GET("/incidents/:id/export.md", byID(p.ExportIncident), gz, uiRead, heavy, cacheControl("private, no-cache"))
	e.GET("/incidents/:id/og.png", byID(p.DrawIncidentCard), uiRead, heavy, cacheControl("private, max-age=300"))
	e.POST("/incidents/:id/share", byID(p.CreateShareLink), small, uiWrite)
	e.POST("/incidents/:id/share/revoke", byID(p.RevokeShareLink), small, uiWrite)
	e.POST("/incidents/:id/freeze", byID(p.FreezeIncident), small, uiWrite)
	e.POST("/incidents/:id/resolve", byID(p.ResolveIncident), small, uiWrite)
	e.GET("/s/:token", p.ShowSharedIncident, heavy) // cached pre-compressed (web/ui/pagecache.go)
	e.GET("/s/:token/samples/:rid", p.ShowSharedSample, gz)
	// The share page's analysis poll; a revoked link stops answering it.
	e.GET("/s/:token/status", p.ShowSharedStatus, cacheControl("private, no-cache"))
	// A share link's card may be cached, but revalidated on every use, so
	// a revoked link's card stops being served.
	e.GET("/s/:token/og.png", p.DrawSharedCard, heavy, cacheControl("no-cache"))
	// The export from a share link: for the link's holder, never kept by a
	// shared cache, revalidated on every use (a revoked link stops it).
	e.GET("/s/:token/export.md", p.ExportSharedIncident, gz, heavy, cacheControl("private, no-cache"))
}

// query refuses a query parameter the route does not take, with a 400
// naming it and the ones it takes: a filter an integration believes
// applied (a typo, another endpoint's: tenant= on /api/v1/spikes) would
// otherwise be ignored and the answer cover everything. After the scope
// check, so a request without a token is a 401 first.
func query(names ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := request.Known(c.QueryParams(), names...); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// byID adapts a handler of a route with an {id} to the router: the id is
// parsed once, here, and a path that names no id is a 404.
func byID(h func(c echo.Context, id int64) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := request.ID(c.Param("id"))
		if err != nil {
			return err
		}
		return h(c, id)
	}
}
