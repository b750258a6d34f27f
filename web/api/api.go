// Package api is Waterline's JSON API (/api/v1, DESIGN §4): thin handlers
// that read a request (web/request, web/ingest), call the store, the
// incident service or diagnose, and answer with the wire types. Handlers
// are methods of API named <Verb><Resource>; web/routes.go mounts them
// behind token auth.
package api

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ingest"
)

// Config holds the API's settings.
type Config struct {
	PublicURL     string        // base URL for permalinks, without a trailing slash
	Ingest        ingest.Limits // per ingest request
	AlertLookback time.Duration // incident start = earliest startsAt − lookback
	// WebhookAllowPrivate lets webhooks be registered for loopback,
	// private and link-local addresses (WATERLINE_WEBHOOK_ALLOW_PRIVATE).
	WebhookAllowPrivate bool
	// SamplesFloor is the earliest sample time the samples retention
	// keeps (zero: none); older samples are refused. nil = no floor.
	SamplesFloor func() time.Time
	// EventsFloor is the earliest event time the points retention keeps
	// (events follow it; zero: none); older events are refused. nil = none.
	EventsFloor func() time.Time
	// ModelAliases renames models in alert labels (see ingest.Alertmanager).
	ModelAliases map[string]string
}

// samplesRetentionWhy says why a sample under SamplesFloor is refused.
const samplesRetentionWhy = "the samples retention (WATERLINE_SAMPLES_RETENTION, counted from the newest stored samples) would drop it"

// sampleLimits are the ingest limits of a samples request: the
// retention's floor joins the age bound.
func (a *API) sampleLimits() ingest.Limits {
	lim := a.cfg.Ingest
	if a.cfg.SamplesFloor != nil {
		lim.Oldest, lim.OldestWhy = a.cfg.SamplesFloor(), samplesRetentionWhy
	}
	return lim
}

// eventsRetentionWhy says why an event under EventsFloor is refused.
const eventsRetentionWhy = "change events follow the points retention (WATERLINE_POINTS_RETENTION, counted from the newest stored points), which would drop it"

// eventLimits are the ingest limits of change events and annotations.
func (a *API) eventLimits() ingest.Limits {
	lim := a.cfg.Ingest
	if a.cfg.EventsFloor != nil {
		lim.Oldest, lim.OldestWhy = a.cfg.EventsFloor(), eventsRetentionWhy
	}
	return lim
}

// Deps are the API's collaborators.
type Deps struct {
	Store     *store.Store
	Incidents *incident.Service
	Registry  prometheus.Registerer // where the ingest metrics are registered
	Now       func() time.Time
	// SLO returns a model's latency SLO in ms, for spike severity; nil = none known.
	SLO func(model string) (float64, bool)
	// QueryRange runs ad-hoc PromQL (GET /api/v1/spikes?query=); nil = no Prometheus.
	QueryRange QueryRangeFunc
	// Traces assembles OTLP spans into samples (POST /v1/traces); its
	// owner runs it. Its counters join /metrics.
	Traces *otlp.Assembler
}

// API serves /api/v1.
type API struct {
	cfg        Config
	store      *store.Store
	incidents  *incident.Service
	now        func() time.Time
	slo        func(model string) (float64, bool)
	queryRange QueryRangeFunc
	metrics    *metrics
	traces     *otlp.Assembler
}

// New returns the API; it registers its metrics on deps.Registry.
func New(cfg Config, deps Deps) *API {
	if deps.Traces != nil {
		deps.Registry.MustRegister(newTraceCollector(deps.Traces))
	}
	return &API{
		cfg: cfg, store: deps.Store, incidents: deps.Incidents, now: deps.Now, slo: deps.SLO, queryRange: deps.QueryRange,
		metrics: newMetrics(deps.Registry),
		traces:  deps.Traces,
	}
}

// metrics count what ingest stored and rejected.
type metrics struct {
	ingestRecords *prometheus.CounterVec // by kind (events, samples, alerts) and outcome (accepted, duplicate)
	ingestBytes   *prometheus.CounterVec // by kind, decompressed
	ingestErrors  *prometheus.CounterVec // by kind and reason
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ingestRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_ingest_records_total",
			Help: "Ingested records by kind (events, samples, alerts) and outcome (accepted, duplicate).",
		}, []string{"kind", "outcome"}),
		ingestBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_ingest_bytes_total",
			Help: "Decompressed ingest body bytes by kind.",
		}, []string{"kind"}),
		ingestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_ingest_errors_total",
			Help: "Rejected ingest requests by kind and reason.",
		}, []string{"kind", "reason"}),
	}
	reg.MustRegister(m.ingestRecords, m.ingestBytes, m.ingestErrors)
	return m
}
