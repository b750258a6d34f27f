// Package web is Waterline's only HTTP layer: the JSON API, the htmx UI
// (templ components in web/ui), auth, and outbound webhooks. Handlers are
// methods on Server named handle<Resource><Action>; every route is listed in
// routes.go; one error handler (errors.go) turns errors into responses.
package web

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/store"
)

// Config holds the HTTP layer's settings.
type Config struct {
	PublicURL       string        // base URL for permalinks, without a trailing slash
	IngestMaxBytes  int64         // decompressed body limit for ingest
	IngestMaxLines  int           // most records per ingest request
	IngestMaxAge    time.Duration // oldest accepted record time, back from now
	IngestMaxFuture time.Duration // newest accepted record time, ahead of now
	RequestTimeout  time.Duration // per-request time limit
	AlertLookback   time.Duration // incident start = earliest startsAt − lookback
	AuthProxyHeader string        // trusted user header from an auth proxy; empty = off
	// IngestConcurrency bounds sample ingest requests handled at once (each
	// holds its samples in memory and a database connection); more wait
	// their turn. 0 = 4.
	IngestConcurrency int
}

// Deps are the collaborators the server needs.
type Deps struct {
	Store    *store.Store
	Log      *slog.Logger
	Registry prometheus.Registerer // where /metrics collectors are registered
	Gatherer prometheus.Gatherer   // what /metrics serves
	// Ready reports whether the service can take traffic (Postgres reachable,
	// migrations current). nil means always ready.
	Ready func(ctx context.Context) error
	Now   func() time.Time // nil = time.Now
	// OnIncidentChanged, if set, is called after an incident was created,
	// extended or resolved (and the change committed), on the request's
	// goroutine: it must not block — hand the id to a worker, e.g. by a
	// non-blocking channel send.
	OnIncidentChanged func(id int64)
	// SLO returns a model's latency SLO in ms, for spike severity; nil = none known.
	SLO func(model string) (float64, bool)
	// QueryRange runs ad-hoc PromQL (GET /api/v1/spikes?query=); nil = no Prometheus.
	QueryRange QueryRangeFunc
}

// Server serves Waterline's HTTP surface.
type Server struct {
	cfg     Config
	store   *store.Store
	log     *slog.Logger
	ready   func(ctx context.Context) error
	now     func() time.Time
	metrics *metrics
	gather  prometheus.Gatherer
	tokens  tokenCache
	echo    *echo.Echo

	sessions sessionCache  // UI sessions (ui_auth.go)
	views    viewCache     // decoded analyses and snapshots (ui_data.go)
	viewData viewDataCache // timeline and sample pages, briefly (ui_cache.go)

	onIncidentChanged func(id int64)
	ingestSlots       chan struct{} // one token per sample ingest in progress
	slo               func(model string) (float64, bool)
	queryRange        QueryRangeFunc
}

// NewServer wires the routes. It registers its metrics on deps.Registry.
func NewServer(cfg Config, deps Deps) *Server {
	s := &Server{
		cfg:    cfg,
		store:  deps.Store,
		log:    deps.Log,
		ready:  deps.Ready,
		now:    deps.Now,
		gather: deps.Gatherer,

		onIncidentChanged: deps.OnIncidentChanged,
		ingestSlots:       make(chan struct{}, cmp.Or(cfg.IngestConcurrency, 4)),
		slo:               deps.SLO,
		queryRange:        deps.QueryRange,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	if s.gather == nil {
		s.gather = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(deps.Registry)
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	s.echo = e
	s.routes(e)
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Echo exposes the router, for tests that compare it with the OpenAPI document.
func (s *Server) Echo() *echo.Echo { return s.echo }
