package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/store"
)

// runPull implements "waterline pull --from T --to T": pull one range of
// history from Prometheus into Postgres and exit. Progress goes to stderr;
// a rerun of an interrupted range resumes it; pulling a range again is
// harmless (points are upserted, event ids are deterministic).
func runPull(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	var fromS, toS string
	c, err := parseConfig("pull", args, env, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&fromS, "from", "", "start of the range: RFC 3339 (2026-10-06T06:00:00Z) or Unix seconds")
		fs.StringVar(&toS, "to", "", "end of the range, included: RFC 3339 or Unix seconds")
	})
	if err != nil {
		return err
	}
	from, err := parseTimeArg("--from", fromS)
	if err != nil {
		return err
	}
	to, err := parseTimeArg("--to", toS)
	if err != nil {
		return err
	}
	if !to.After(from) {
		return fmt.Errorf("--to (%s) must be after --from (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if c.PrometheusURL == "" {
		return errors.New("PROMETHEUS_URL (or -prometheus-url) is required, e.g. http://127.0.0.1:9090")
	}
	cfg, err := pull.LoadConfig(c.ConfigFile)
	if err != nil {
		return err
	}
	if err := cfg.CheckPullable(); err != nil {
		return err
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	log := newLogger(c, stderr)
	cfg, _ = detectPresets(ctx, cfg, c.backend(), to, log)
	// Validating first turns a bad query or an unreachable Prometheus into
	// one clear line before any work starts.
	if err := cfg.Validate(ctx, c.backend(), to); err != nil {
		return err
	}
	p, err := pull.New(cfg, c.backend(), st, pull.Options{Log: log})
	if err != nil {
		return err
	}
	var last time.Time
	pr, err := p.History(ctx, from, to, func(pr pull.Progress) {
		if time.Since(last) < time.Second && pr.SourcesDone < pr.Sources {
			return
		}
		last = time.Now()
		fmt.Fprintf(stderr, "pull: %d/%d sources, %d/%d chunks, %d points, %d events, %.1fs\n",
			pr.SourcesDone, pr.Sources, pr.ChunksDone, pr.Chunks, pr.Points, pr.Events, pr.Elapsed.Seconds())
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted after %d of %d chunks; run the same command again to resume", pr.ChunksDone, pr.Chunks)
		}
		return err
	}
	rate := float64(pr.Points) / max(pr.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(stderr, "pulled %s – %s: %d points, %d events from %d sources in %.1fs (%.0f points/s)\n",
		from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), pr.Points, pr.Events, pr.Sources, pr.Elapsed.Seconds(), rate)
	if len(pr.NoSeries) > 0 {
		fmt.Fprintf(stderr, "no series from %d of %d sources (their metrics are not in Prometheus over the range, or their labels do not match): %s\n",
			len(pr.NoSeries), pr.Sources, strings.Join(pr.NoSeries, ", "))
	}
	// History counts as data arriving: record its latency spikes (without
	// opening incidents for the past) so they show on the home page.
	n, err := diagnose.NewDetector(st, historyDetectorOptions(c, cfg.SLOFor)).Record(ctx, from, to)
	if err != nil {
		return fmt.Errorf("recording spikes: %w", err)
	}
	fmt.Fprintf(stderr, "recorded %d latency spikes in the range\n", n)
	return nil
}

// historyDetectorOptions are the detector's for a history pull: serve's
// sensitivity (WATERLINE_DETECT_SENSITIVITY), so the spikes recorded from
// history are the ones serve's detector would record; it was dropped.
func historyDetectorOptions(c config, slo diagnose.SLOFunc) diagnose.DetectorOptions {
	return diagnose.DetectorOptions{SLO: slo, Sensitivity: correlate.Sensitivity(c.DetectSens)}
}

// parseTimeArg reads RFC 3339 or Unix seconds.
func parseTimeArg(flagName, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, fmt.Errorf("%s is required", flagName)
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return time.UnixMilli(int64(s * 1000)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%s: want RFC 3339 (2026-10-06T06:00:00Z) or Unix seconds, got %q", flagName, v)
}

// setupPull loads and checks WATERLINE_CONFIG (even when pulling is off,
// so a broken file fails serve at start, and because its SLOs are used
// anyway) and, with PROMETHEUS_URL set, builds the Puller (also used for
// ad-hoc PromQL). With a non-zero WATERLINE_PULL_INTERVAL it starts the pull
// loop in the background until bg ends; the puller's health joins
// /metrics via reg. The start-up questions to Prometheus (presets,
// queries) end with ctx (a signal) and within startupChecks: a
// Prometheus that accepts connections and never answers held serve from
// listening, and from its signals, for two and a half minutes (the
// liveness probe killed it, and ingest, which needs no Prometheus,
// stopped with it). Unanswered, they are asked again in the background.
func setupPull(ctx, bg context.Context, c config, st *store.Store, reg prometheus.Registerer, log *slog.Logger, onStored func()) (*pull.Config, *pull.Puller, error) {
	cfg, err := pull.LoadConfig(c.ConfigFile)
	if err != nil {
		return nil, nil, err
	}
	if c.PrometheusURL == "" {
		log.Info("pull off: PROMETHEUS_URL is not set")
		return cfg, nil, nil
	}
	if err := cfg.CheckPullable(); err != nil {
		return nil, nil, err
	}
	auto := cfg
	sctx, cancel := context.WithTimeout(ctx, startupChecks)
	defer cancel()
	cfg, detected := detectPresets(sctx, cfg, c.backend(), time.Now(), log)
	if err := cfg.Validate(sctx, c.backend(), time.Now()); err != nil {
		var qe *pull.QueryError
		if errors.As(err, &qe) && qe.Rejected {
			return nil, nil, err
		}
		log.Warn("pull: queries not validated; the loop will retry", "err", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err // a signal during the checks: stop, do not start
	}
	p, err := pull.New(cfg, c.backend(), st, pull.Options{Log: log, OnStored: onStored})
	if err != nil {
		return nil, nil, err
	}
	if err := p.RegisterMetrics(reg); err != nil {
		return nil, nil, err
	}
	if !detected {
		// Prometheus could not be asked: keep asking, and put what it
		// names in effect once it answers — a serve started during an
		// outage read inference_* metrics until it was restarted.
		go redetectPresets(bg, auto, c.backend(), presetRedetectEvery, p, log)
	}
	if c.PullInterval == 0 {
		log.Info("pull loop off", "interval", c.PullInterval)
		return cfg, p, nil
	}
	go func() { _ = p.Run(bg, c.PullInterval) }()
	return cfg, p, nil
}

// detectPresets resolves presets "auto" (the default without
// WATERLINE_CONFIG) from the metrics Prometheus holds, and says which it
// took; a Prometheus that cannot be asked leaves the built-in default, and
// asked is false.
func detectPresets(ctx context.Context, cfg *pull.Config, b pull.Backend, at time.Time, log *slog.Logger) (out *pull.Config, asked bool) {
	out, found, err := cfg.DetectPresets(ctx, b, at)
	switch {
	case err != nil:
		log.Warn("pull: presets not detected; reading the built-in default (inference_* metrics) until Prometheus answers", "err", err)
		return out, false
	case len(found) > 0:
		log.Info("pull: presets detected from Prometheus's metric names", "presets", strings.Join(found, ","), "in_effect", strings.Join(out.Presets, ","))
	}
	return out, true
}

// startupChecks bounds serve's start-up questions to Prometheus.
var startupChecks = 20 * time.Second

// presetRedetectEvery is how often presets are asked for again while
// Prometheus cannot be asked.
const presetRedetectEvery = 30 * time.Second

// redetectPresets asks Prometheus for the presets of cfg every interval
// until it answers, then puts them in effect in p.
func redetectPresets(ctx context.Context, cfg *pull.Config, b pull.Backend, every time.Duration, p *pull.Puller, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		out, found, err := cfg.DetectPresets(ctx, b, time.Now())
		if err != nil {
			continue
		}
		if len(found) > 0 {
			p.SetConfig(out)
			log.Info("pull: presets detected now that Prometheus answers", "presets", strings.Join(found, ","), "in_effect", strings.Join(out.Presets, ","))
		}
		return
	}
}
