package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/sim"
)

// demoOptions are the demo's flags.
type demoOptions struct {
	scenario    sim.Scenario
	seed        int64
	confounders bool
	small       bool
	keep        bool
	addr        string
	timeout     time.Duration // for the analysis (live: for the detector, after the onset)
	live        bool          // scrape, pull, detect in real time
	injectAfter time.Duration // live: the onset, after start-up
}

// demoSteps is the number of numbered steps the demo prints.
const demoSteps = 9

// runDemo implements "waterline demo": on a machine with nothing
// configured it starts a private Postgres and a real Prometheus, simulates
// an inference fleet with one incident ending now, backfills its metrics,
// runs the server in-process, pushes events and samples through the HTTP
// API, pulls the range, opens an incident around the spike, waits for the
// analysis and prints the incident page's URL. It then serves until ctx
// ends (Ctrl-C) and stops everything it started, removing its directory
// unless -keep.
func runDemo(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	o, err := parseDemoFlags(args, env, stderr)
	if err != nil {
		return err
	}
	steps := demoSteps
	if o.live {
		steps = liveSteps
	}
	d := &demo{opts: o, env: env, stdout: &lockedWriter{w: stdout}, stderr: stderr, p: newProgress(stderr, steps)}
	defer d.cleanup()
	if o.live {
		err = d.setUpLive(ctx)
	} else {
		err = d.setUp(ctx)
	}
	if ctx.Err() != nil {
		d.p.note("\ninterrupted; stopping what the demo started")
		return nil
	}
	if err != nil {
		return err
	}
	<-ctx.Done()
	d.p.note("\nstopping Waterline, Prometheus and Postgres…")
	return nil
}

func parseDemoFlags(args []string, env func(string) string, stderr io.Writer) (demoOptions, error) {
	fs := flag.NewFlagSet("waterline demo", flag.ContinueOnError)
	scenario := fs.String("scenario", "release", "the injected cause: release, capacity, local_replica, batching, cold_start, downstream, routing or ingress")
	o := demoOptions{}
	fs.Int64Var(&o.seed, "seed", 1, "random seed of the simulated fleet")
	fs.BoolVar(&o.confounders, "confounders", true, "add innocent changes around the onset (another model's deploy, a flag flip, …)")
	fs.BoolVar(&o.small, "small", false, "a small fleet (2 models, 90 minutes): quicker, for CI")
	fs.BoolVar(&o.keep, "keep", false, "keep the demo directory (Postgres data, TSDB, logs, truth.json) after Ctrl-C")
	addr := env("WATERLINE_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	fs.StringVar(&o.addr, "addr", addr, "listen address; a free port is used when it is taken ($WATERLINE_ADDR)")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to wait for the analysis (with -live: for the detector's incident after the onset, default 10m)")
	fs.BoolVar(&o.live, "live", false, "real time: exporters scraped by Prometheus every 5s, the pull loop and detector on, events and samples pushed as they happen, a webhook receiver; only the detector opens the incident")
	fs.DurationVar(&o.injectAfter, "inject-after", 3*time.Minute, "with -live: when the incident starts, after start-up")
	if err := parseFlags(fs, args, stderr, func() {
		fmt.Fprintln(stderr, "usage: waterline demo [flags]\n\nA simulated inference fleet with one incident, end to end, on a private Postgres\n(DATABASE_URL overrides) and a private Prometheus. Ctrl-C stops it.\n\nflags:")
		fs.PrintDefaults()
	}); err != nil {
		return o, err
	}
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	if o.live && !timeoutSet {
		o.timeout = liveDefaultTimeout
	}
	if o.injectAfter < 0 {
		return o, fmt.Errorf("-inject-after: want a non-negative duration, got %s", o.injectAfter)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	sc, err := sim.ParseScenario(*scenario)
	if err != nil || sc == sim.None {
		return o, fmt.Errorf("-scenario: want one of release, capacity, local_replica, batching, cold_start, downstream, routing, ingress, got %q", *scenario)
	}
	o.scenario = sc
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return o, fmt.Errorf("-addr: want host:port, got %q", o.addr)
	}
	return o, nil
}

// demo is one run: what it started, in order, so cleanup can undo it.
type demo struct {
	opts   demoOptions
	env    func(string) string
	stdout io.Writer
	stderr io.Writer
	p      *progress

	dir   string   // holds everything the demo writes
	stops []func() // run last-first by cleanup
}

// lockedWriter serialises writes: a live run prints from several
// goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// atExit registers fn to run at cleanup, before what was registered
// earlier.
func (d *demo) atExit(fn func()) { d.stops = append(d.stops, fn) }

// cleanup stops what the demo started, newest first, and removes its
// directory unless -keep.
func (d *demo) cleanup() {
	for i := len(d.stops) - 1; i >= 0; i-- {
		d.stops[i]()
	}
	if d.dir == "" {
		return
	}
	if d.opts.keep {
		d.p.note("kept %s (Postgres data in pg/, Prometheus TSDB in prometheus/, logs, truth.json)", d.dir)
		return
	}
	if err := os.RemoveAll(d.dir); err != nil {
		d.p.note("could not remove %s: %v", d.dir, err)
	}
}

// setUp runs the numbered steps; the server keeps running afterwards.
func (d *demo) setUp(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "waterline-demo-")
	if err != nil {
		return err
	}
	d.dir = dir
	// The private cluster runs as the postgres user when we are root,
	// which must be able to reach its data directory inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	d.p.note("waterline demo: scenario %s, seed %d, confounders %v; working in %s", d.opts.scenario, d.opts.seed, onOff(d.opts.confounders), dir)

	dbURL, err := d.tools(ctx)
	if err != nil {
		return err
	}
	if dbURL, err = d.postgres(ctx, dbURL); err != nil {
		return err
	}
	fl, err := d.simulate(ctx)
	if err != nil {
		return err
	}
	promURL, err := d.prometheus(ctx, fl)
	if err != nil {
		return err
	}
	wl, err := d.serve(ctx, dbURL, promURL)
	if err != nil {
		return err
	}
	if err := d.push(ctx, wl, fl); err != nil {
		return err
	}
	if err := d.pull(ctx, wl, fl); err != nil {
		return err
	}
	res, err := d.investigate(ctx, wl, fl)
	if err != nil {
		return err
	}
	d.printSummary(wl, fl, res)
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
