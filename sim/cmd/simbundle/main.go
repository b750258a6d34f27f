// Command simbundle writes a simulated incident bundle in the layout of the
// shared scenarios (metrics.om.gz, events.ndjson, samples.ndjson.gz,
// scenario.json, truth.json), so a simulated incident can be replayed like
// a recorded one:
//
//	go run ./sim/cmd/simbundle -out /tmp/rel -scenario release -seed 3
//	../shared/eval/replay /tmp/rel
//
// Progress goes to stderr.
package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/waterline-dev/waterline/sim"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "simbundle:", err)
		os.Exit(1)
	}
}

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("simbundle", flag.ContinueOnError)
	fs.SetOutput(log)
	var (
		out        = fs.String("out", "", "bundle directory to write (created; required)")
		scenario   = fs.String("scenario", "release", "release|capacity|local_replica|batching|cold_start|downstream|routing|ingress|none")
		seed       = fs.Int64("seed", 1, "random seed")
		start      = fs.String("start", "", `window start, RFC 3339, or "now" for a window ending now (default: sim.DefaultStart)`)
		duration   = fs.Duration("duration", 0, "window length (default 3h, 30m with -small)")
		step       = fs.Duration("step", 0, "scrape step (default 15s)")
		onset      = fs.Duration("onset", 0, "offset of the cause from the start (default: about two thirds in)")
		strength   = fs.Float64("strength", 0, "effect strength (default 1; 0.5 weak, 2 severe)")
		effect     = fs.Duration("effect", 0, "how long the cause lasts (default: to the end)")
		target     = fs.String("target", "", "model (or node for local_replica) the cause hits")
		confound   = fs.Bool("confounders", false, "add innocent changes around the onset")
		hide       = fs.Bool("hide-cause-event", false, "do not push the cause's own event")
		models     = fs.Int("models", 0, "number of models (1..6)")
		replicas   = fs.Int("replicas", 0, "replicas per model")
		nodes      = fs.Int("nodes", 0, "GPU nodes")
		tenants    = fs.Int("tenants", 0, "tenants")
		traffic    = fs.Float64("traffic", 0, "traffic scale (default 1)")
		small      = fs.Bool("small", false, "the small test fleet (30 min, 2 models)")
		compressLv = fs.Int("gzip", gzip.BestSpeed, "gzip level")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-out is required")
	}
	sc, err := sim.ParseScenario(*scenario)
	if err != nil {
		return err
	}
	o := sim.Options{Seed: *seed, Scenario: sc}
	if *small {
		o = sim.Small(*seed, sc)
	}
	set := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	set(&o.Duration, *duration)
	set(&o.Step, *step)
	set(&o.Onset, *onset)
	set(&o.EffectDuration, *effect)
	if *strength != 0 {
		o.Strength = *strength
	}
	if *models != 0 {
		o.Models = *models
	}
	if *replicas != 0 {
		o.ReplicasPerModel = *replicas
	}
	if *nodes != 0 {
		o.Nodes = *nodes
	}
	if *tenants != 0 {
		o.Tenants = *tenants
	}
	if *traffic != 0 {
		o.TrafficScale = *traffic
	}
	o.Target, o.Confounders, o.HideCauseEvent = *target, *confound, *hide
	switch *start {
	case "":
	case "now":
		d := o.Duration
		if d == 0 {
			d = 3 * time.Hour
		}
		o.Start = time.Now().UTC().Add(-d)
	default:
		t, err := time.Parse(time.RFC3339, *start)
		if err != nil {
			return fmt.Errorf("-start: %v", err)
		}
		o.Start = t
	}

	t0 := time.Now()
	f, err := sim.New(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(log, "simbundle: %s fleet, seed %d, simulating requests…\n", sc, *seed)
	n := f.SampleCount()
	fmt.Fprintf(log, "simbundle: simulated in %.1fs, %d samples kept\n", time.Since(t0).Seconds(), n)

	last := time.Time{}
	progress := func(done, total int) {
		if now := time.Now(); done == total || now.Sub(last) > 250*time.Millisecond {
			last = now
			fmt.Fprintf(log, "\rsimbundle: metrics %3d%% (%d/%d series)", 100*done/total, done, total)
			if done == total {
				fmt.Fprintln(log)
			}
		}
	}
	if err := writeGzip(filepath.Join(*out, "metrics.om.gz"), *compressLv, func(w io.Writer) error {
		return f.WriteOpenMetrics(w, progress)
	}); err != nil {
		return err
	}
	if err := writeGzip(filepath.Join(*out, "samples.ndjson.gz"), *compressLv, func(w io.Writer) error {
		_, err := f.WriteSamplesNDJSON(w)
		return err
	}); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*out, "events.ndjson"), f.WriteEventsNDJSON); err != nil {
		return err
	}
	d := f.Description()
	d.Name = filepath.Base(filepath.Clean(*out))
	if err := writeJSON(filepath.Join(*out, "scenario.json"), d); err != nil {
		return err
	}
	tr := f.Truth()
	if err := writeJSON(filepath.Join(*out, "truth.json"), tr); err != nil {
		return err
	}
	fmt.Fprintf(log, "simbundle: wrote %s in %.1fs: %d events, %d samples; truth %s %+v\n",
		*out, time.Since(t0).Seconds(), d.Events, d.Samples, tr.Category, tr.Target)
	for _, note := range tr.Notes {
		fmt.Fprintln(log, "  ", note)
	}
	return nil
}

func writeFile(path string, fill func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func writeGzip(path string, level int, fill func(io.Writer) error) error {
	return writeFile(path, func(w io.Writer) error {
		zw, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return err
		}
		if err := fill(zw); err != nil {
			return err
		}
		return zw.Close()
	})
}

func writeJSON(path string, v any) error {
	return writeFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}
