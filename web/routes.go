package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/waterline-dev/waterline/store"
)

// routes lists Waterline's whole HTTP surface.
func (s *Server) routes(e *echo.Echo) {
	e.Use(s.withRequestID, s.withLogAndMetrics, s.withTimeout)

	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.handleMetrics)
	e.GET("/api/openapi.json", s.handleOpenAPI)

	read := s.requireScope(store.ScopeRead)
	write := s.requireScope(store.ScopeWrite)
	api := e.Group("/api/v1")
	api.POST("/events", s.handleEventsCreate, write)
	api.POST("/samples", s.handleSamplesCreate, write)
	api.POST("/alerts/alertmanager", s.handleAlertmanager, write)
	api.POST("/incidents", s.handleIncidentsCreate, write)
	api.GET("/incidents", s.handleIncidentsList, read)
	api.GET("/incidents/:id", s.handleIncidentsGet, read)
	api.GET("/timeline", s.handleTimelineGet, read)
	api.GET("/pull/status", s.handlePullStatusGet, read)
	api.POST("/incidents/:id/resolve", s.handleIncidentsResolve, write)
	api.GET("/incidents/:id/analysis", s.handleAnalysisGet, read)
	api.GET("/spikes", s.handleSpikesList, read)
	admin := s.requireScope(store.ScopeAdmin)
	api.POST("/webhooks", s.handleWebhooksCreate, admin)
	api.GET("/webhooks", s.handleWebhooksList, admin)
	api.DELETE("/webhooks/:id", s.handleWebhooksDelete, admin)
	api.GET("/webhooks/:id/deliveries", s.handleWebhookDeliveries, admin)

	// UI (htmx + templ). Pages need a browser session (or a trusted auth
	// proxy user); changes need write scope and a CSRF token. Share links
	// need neither: the token in the path is the capability.
	gz := middleware.GzipWithConfig(middleware.GzipConfig{Level: 5, MinLength: 1024})
	uiRead, uiWrite := s.uiAuth(store.ScopeRead), s.uiAuth(store.ScopeWrite)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", staticHandler())), gz)
	e.GET("/login", s.handleLoginForm)
	e.POST("/login", s.handleLogin)
	e.POST("/logout", s.handleLogout, uiRead)
	e.GET("/", s.handleHome, gz, uiRead)
	e.GET("/explore", s.handleExplore, gz, uiRead)
	e.GET("/incidents/:id", s.handleIncidentPage, gz, uiRead)
	e.GET("/incidents/:id/status", s.handleIncidentStatus, uiRead)
	e.GET("/incidents/:id/samples/:rid", s.handleSampleDetail, gz, uiRead)
	e.GET("/incidents/:id/export.md", s.handleIncidentExport, gz, uiRead)
	e.GET("/incidents/:id/og.png", s.handleIncidentOGImage, uiRead)
	e.POST("/incidents/:id/share", s.handleIncidentShare, uiWrite)
	e.POST("/incidents/:id/share/revoke", s.handleIncidentShareRevoke, uiWrite)
	e.POST("/incidents/:id/freeze", s.handleIncidentFreeze, uiWrite)
	e.POST("/incidents/:id/resolve", s.handleIncidentResolveUI, uiWrite)
	e.GET("/s/:token", s.handleSharePage, gz)
	e.GET("/s/:token/samples/:rid", s.handleShareSampleDetail, gz)
	e.GET("/s/:token/og.png", s.handleShareOGImage)
}
