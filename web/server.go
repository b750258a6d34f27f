// Package web is Waterline's HTTP server: the router (every route in
// routes.go), shared middleware (request ids, logs and metrics, time
// limits, token auth), one error handler that maps every error onto a
// response (errors.go), and the operational endpoints. The handlers live
// by job: web/api (JSON API), web/ingest (decoding pushed data), web/ui
// (pages, with templ views in web/ui/views) and web/webhook (outbound
// webhooks).
package web

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/ui"
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
	AuthProxyScope  string        // what proxy users may do: read (default), write or admin
	// DetectorOn says the background spike detector runs (serve's
	// WATERLINE_DETECT_INTERVAL > 0), DetectorOpens that it opens
	// incidents: the home page says what this server does.
	DetectorOn, DetectorOpens bool
	// IngestConcurrency bounds the requests of one kind that read and
	// handle their bodies at once (samples; traces; events, Alertmanager
	// and annotations), each holding memory and a database connection;
	// small bodies (incidents, webhooks, forms) get four times as many.
	// More wait their turn, without a slot until their body arrives. 0 = 4.
	IngestConcurrency int
	// HeavyReads bounds the reads that load curves over a window at once
	// (spikes, timeline, explore, incident pages and their exports and
	// cards); more wait up to 15 s, then 503. 0 = two per CPU, at least 4.
	HeavyReads int
	// BodyGrace and BodyMinRate pace request bodies: the reads of a body
	// may wait for the client BodyGrace + bytes received / BodyMinRate in
	// all, else 408. 0 = 5 s and 16 KiB/s.
	BodyGrace   time.Duration
	BodyMinRate int
	// WebhookAllowPrivate lets webhooks target loopback, private and
	// link-local addresses; the dispatcher needs the same setting.
	WebhookAllowPrivate bool
	// SamplesFloor is the earliest sample time retention keeps (zero:
	// none): older samples are refused, not stored and dropped. nil = none.
	SamplesFloor func() time.Time
	// EventsFloor is the same for change events, which follow the points'
	// retention (zero: none). nil = none.
	EventsFloor func() time.Time
	// ModelAliases renames models in alert labels onto the fleet's names
	// (WATERLINE_CONFIG's model_aliases, as for pulled curves and spans).
	ModelAliases map[string]string
}

// Deps are the collaborators the server needs.
type Deps struct {
	Store *store.Store
	// Incidents opens, resolves and freezes incidents for every route that
	// changes one. nil: a service without watchers, whose queued freezes
	// (Alertmanager resolutions) run only if someone runs it.
	Incidents *incident.Service
	Log       *slog.Logger
	Registry  prometheus.Registerer // where /metrics collectors are registered
	Gatherer  prometheus.Gatherer   // what /metrics serves
	// Ready reports whether the service can take traffic (Postgres reachable,
	// migrations current). nil means always ready.
	Ready func(ctx context.Context) error
	Now   func() time.Time // nil = time.Now
	// SLO returns a model's latency SLO in ms, for spike severity; nil = none known.
	SLO func(model string) (float64, bool)
	// QueryRange runs ad-hoc PromQL (GET /api/v1/spikes?query=); nil = no Prometheus.
	QueryRange api.QueryRangeFunc
	// Traces assembles the spans POST /v1/traces receives into samples;
	// its owner runs it (Assembler.Run). nil: one with the default
	// mapping that stores into Store, which nobody runs (tests that do
	// not send traces).
	Traces *otlp.Assembler
}

// Server serves Waterline's HTTP surface.
type Server struct {
	cfg      Config
	store    *store.Store
	log      *slog.Logger
	ready    func(ctx context.Context) error
	now      func() time.Time
	metrics  *metrics
	gather   prometheus.Gatherer
	tokens   tokenCache
	failures failLimiter // failed sign-ins and API authentications (ratelimit.go)
	verdicts tokenVerdicts
	gates    gates
	heavy    chan struct{} // heavy-read slots (heavyreads.go)
	echo     *echo.Echo
	api      *api.API
	pages    *ui.Pages
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
	if deps.Incidents == nil {
		deps.Incidents = incident.New(deps.Store, incident.Options{Log: s.log, Now: s.now})
	}
	s.metrics = newMetrics(deps.Registry)
	s.gates = newGates(cfg)
	s.heavy = make(chan struct{}, cmp.Or(cfg.HeavyReads, heavySlots()))
	if deps.Traces == nil {
		deps.Traces = otlp.NewAssembler(otlp.DefaultConfig(), otlp.Options{Sink: StoreSink(deps.Store), Now: s.now,
			MaxAge: cfg.IngestMaxAge, MaxFuture: cfg.IngestMaxFuture})
	}
	s.api = api.New(api.Config{
		PublicURL: cfg.PublicURL,
		Ingest: ingest.Limits{MaxBytes: cfg.IngestMaxBytes, MaxRecords: cfg.IngestMaxLines,
			MaxAge: cfg.IngestMaxAge, MaxFuture: cfg.IngestMaxFuture},
		AlertLookback:       cfg.AlertLookback,
		WebhookAllowPrivate: cfg.WebhookAllowPrivate,
		SamplesFloor:        cfg.SamplesFloor,
		EventsFloor:         cfg.EventsFloor,
		ModelAliases:        cfg.ModelAliases,
	}, api.Deps{Store: deps.Store, Incidents: deps.Incidents, Registry: deps.Registry, Now: s.now,
		SLO: deps.SLO, QueryRange: deps.QueryRange, Traces: deps.Traces})
	s.pages = ui.New(ui.Config{PublicURL: cfg.PublicURL, AuthProxyHeader: cfg.AuthProxyHeader,
		AuthProxyScope: store.TokenScope(cfg.AuthProxyScope), DetectorOn: cfg.DetectorOn, DetectorOpens: cfg.DetectorOpens},
		ui.Deps{Store: deps.Store, Incidents: deps.Incidents, Now: s.now})
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.errorHandler
	s.echo = e
	s.routes(e)
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// HEAD is GET without the body (RFC 9110 §9.3.2), which link
	// unfurlers and monitors probe with. The router sees a GET; net/http,
	// which keeps the original request, drops the body it writes.
	if r.Method == http.MethodHead {
		r = r.Clone(r.Context())
		r.Method = http.MethodGet
	}
	s.echo.ServeHTTP(w, r)
}

// Echo exposes the router, for tests that compare it with the OpenAPI document.
func (s *Server) Echo() *echo.Echo { return s.echo }

// StoreSink stores the samples an otlp.Assembler assembles. The store is
// idempotent by time and request id (the trace id), so a batch retried
// after a failure, or a trace assembled twice, is stored once.
func StoreSink(st *store.Store) otlp.Sink {
	return func(ctx context.Context, samples []correlate.Sample) error {
		_, _, err := st.InsertSamples(ctx, samples)
		return err
	}
}
