package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web"
)

// runServe runs the HTTP server (and the background loops) until ctx ends,
// then drains in-flight requests before returning.
func runServe(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig("serve", args, env, stderr, nil)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	// The pull loop wakes the detector after a round that stored points
	// (both leases held here: one replica, or the one that won both).
	detectWake := make(chan struct{}, 1)
	pullCfg, puller, err := setupPull(ctx, bg, c, st, reg, log, func() {
		select {
		case detectWake <- struct{}{}:
		default: // a wake is pending already
		}
	})
	if err != nil {
		return err
	}
	traceCfg, err := otlp.LoadConfig(c.ConfigFile)
	if err != nil {
		return err
	}
	// Samples older than retention keeps are refused, not stored and
	// dropped at the next maintenance.
	floor := st.NewSamplesFloor(c.SamplesRetention)
	// Events likewise, under the points' retention they follow.
	eventsFloor := st.NewEventsFloor(c.PointsRetention)
	for _, f := range []*store.RetentionFloor{floor, eventsFloor} {
		if err := f.Refresh(ctx, time.Now()); err != nil {
			log.Warn("reading a retention floor failed; none until it is read", "err", err)
		}
	}
	traces := otlp.NewAssembler(traceCfg, otlp.Options{Sink: web.StoreSink(st),
		MaxAge: c.IngestMaxAge, MaxFuture: c.IngestMaxFuture, Oldest: floor.At, Log: log})
	hooks := newWebhooks(c, st, log)
	// The first data retention drops: the later of the two floors.
	retentionFloor := func() time.Time {
		s, e := floor.At(), eventsFloor.At()
		if s.After(e) {
			return s
		}
		return e
	}
	analyzer, incidents, detector := newDiagnosis(c, st, pullCfg.SLOFor, log, hooks, detectWake, retentionFloor)
	srv := web.NewServer(web.Config{
		PublicURL:       c.PublicURL,
		IngestMaxBytes:  c.IngestMaxBytes,
		IngestMaxLines:  c.IngestMaxLines,
		IngestMaxAge:    c.IngestMaxAge,
		IngestMaxFuture: c.IngestMaxFuture,
		RequestTimeout:  c.RequestTimeout,
		AlertLookback:   c.AlertLookback,
		AuthProxyHeader: c.AuthProxyHeader,
		AuthProxyScope:  c.AuthProxyScope,
		SamplesFloor:    floor.At,
		EventsFloor:     eventsFloor.At,
		DetectorOn:      detector != nil,
		DetectorOpens:   detector != nil && c.DetectOpen,
		ModelAliases:    pullCfg.ModelAliases,

		WebhookAllowPrivate: c.WebhookAllowPrivate,
	}, web.Deps{
		Store:      st,
		Incidents:  incidents,
		Log:        log,
		Registry:   reg,
		Gatherer:   reg,
		Ready:      st.Ready,
		SLO:        pullCfg.SLOFor,
		QueryRange: adhocQuery(puller),
		Traces:     traces,
	})

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	httpSrv := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go maintainLoop(bg, st, c, log)
	// Token and session caches serve only while revocations are heard.
	go func() { _ = srv.WatchAuth(bg) }()
	go floorLoop(bg, log, floor, eventsFloor)
	tracesDone := make(chan struct{})
	go func() { traces.Run(bg, 250*time.Millisecond); close(tracesDone) }()
	go analyzer.Run(bg)
	go incidents.Run(bg)
	hooks.run(bg)
	if detector != nil {
		// One detector among the replicas: the lease holder's.
		go runLeased(bg, st, detectLease, min(c.DetectInterval, 15*time.Second), log, detector.Run)
	}

	log.Info("waterline serving", "addr", ln.Addr().String(), "public_url", c.PublicURL)
	if c.PublicURLGuessed {
		log.Warn("WATERLINE_PUBLIC_URL is not set and the server listens on every interface: share links and webhook links point at " +
			c.PublicURL + ", which opens on this machine only; set WATERLINE_PUBLIC_URL to the address users reach")
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Graceful: stop accepting, let in-flight requests (an ingest
	// transaction, say) finish, then stop the loops. A request may run
	// for the request timeout: the drain waits that long. Past it, the
	// connections left are closed, and the traces and the webhook being
	// sent are still finished (a drain that ran over used to return at
	// once, skipping them, and exit 1 after a clean drain).
	drain := drainTimeout(c.RequestTimeout)
	log.Info("shutting down; draining in-flight requests", "within", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := httpSrv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("requests still running after the drain; closing their connections", "within", drain, "err", err)
		_ = httpSrv.Close()
	}
	stopBG()
	<-tracesDone // traces whose entry span arrived are stored, not lost
	hooks.wait() // a webhook being sent is finished and recorded, not sent again later
	return nil
}

// floorLoop reads the retention floors every minute: they move as newer
// data arrives.
func floorLoop(ctx context.Context, log *slog.Logger, floors ...*store.RetentionFloor) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, f := range floors {
			if err := f.Refresh(ctx, time.Now()); err != nil && ctx.Err() == nil {
				log.Warn("reading a retention floor failed", "err", err)
			}
		}
	}
}

// maintainLoop keeps day partitions ahead of time, applies retention and
// prunes redundant analysis versions and long-filled pull gaps.
func maintainLoop(ctx context.Context, st *store.Store, c config, log *slog.Logger) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		dropped, err := st.Maintain(ctx, time.Now(), 2, store.Retention{Samples: c.SamplesRetention, Points: c.PointsRetention})
		if err != nil && ctx.Err() == nil {
			log.Warn("partition maintenance failed", "err", err)
		} else if dropped > 0 {
			log.Info("retention dropped old partitions", "partitions", dropped)
		}
		// Redundant analysis versions of open incidents (one every pass):
		// those older than an hour that repeat their predecessor's cause.
		if n, err := st.PruneAnalyses(ctx, time.Hour); err != nil && ctx.Err() == nil {
			log.Warn("pruning analysis versions failed", "err", err)
		} else if n > 0 {
			log.Info("pruned redundant analysis versions", "versions", n)
		}
		// Outage gaps the pull loop filled more than a week ago: the pull
		// health page shows the last week; only `waterline pull` pruned
		// them before, and under serve they piled up.
		if err := st.PruneFilledGaps(ctx, time.Now().Add(-7*24*time.Hour)); err != nil && ctx.Err() == nil {
			log.Warn("pruning filled pull gaps failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func newLogger(c config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// drainTimeout is how long shutdown waits for in-flight requests: as long
// as one may run (the request timeout, plus a margin), at least 30 s.
func drainTimeout(requestTimeout time.Duration) time.Duration {
	if requestTimeout > 0 {
		return max(30*time.Second, requestTimeout+5*time.Second)
	}
	return 30 * time.Second
}
