package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/internal/demo/promrun"
	"github.com/waterline-dev/waterline/sim"
)

// demoFleet is the simulated fleet and what it is known to contain.
type demoFleet struct {
	f     *sim.Fleet
	desc  sim.Description
	truth sim.Truth
}

// fleetOptions is the demo's fleet: the simulator's default fleet (four
// models on six GPU nodes) over the three hours before now, or with
// -small two models over ninety minutes — still an hour of baseline
// before the onset, which spike detection needs.
func (o demoOptions) fleetOptions(now time.Time) sim.Options {
	so := sim.Options{Seed: o.seed, Scenario: o.scenario, Confounders: o.confounders, Duration: 3 * time.Hour}
	if o.small {
		so = sim.Options{
			Seed: o.seed, Scenario: o.scenario, Confounders: o.confounders,
			Duration: 90 * time.Minute, Onset: 60 * time.Minute,
			Models: 2, ReplicasPerModel: 2, Nodes: 3, Tenants: 4, TrafficScale: 0.7,
		}
	}
	so.Start = now.Add(-so.Duration)
	return so
}

// simulate runs the fleet's requests and writes truth.json and
// scenario.json into the demo directory, for whoever wants to check the
// answer.
func (d *demo) simulate(ctx context.Context) (*demoFleet, error) {
	d.p.step("simulate fleet")
	f, err := sim.New(d.opts.fleetOptions(time.Now().UTC()))
	if err != nil {
		return nil, err
	}
	fl := &demoFleet{f: f, desc: f.Description(), truth: f.Truth()}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for name, v := range map[string]any{"truth.json": fl.truth, "scenario.json": fl.desc} {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(d.dir, name), append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	replicas := 0
	for _, m := range fl.desc.Models {
		replicas += m.Replicas
	}
	d.p.done("%d models, %d replicas on %d GPU nodes, %d tenants, %s ending now: %s request samples, %d change events",
		len(fl.desc.Models), replicas, len(fl.desc.Nodes), len(fl.desc.Tenants),
		fmtSpan(fl.desc.End.Sub(fl.desc.Start)), thousands(int64(fl.desc.Samples)), fl.desc.Events)
	return fl, nil
}

// prometheus writes the fleet's metrics as OpenMetrics (the exporters'
// names of DESIGN §6), backfills them with promtool and starts
// Prometheus on them; it returns Prometheus' URL.
func (d *demo) prometheus(ctx context.Context, fl *demoFleet) (string, error) {
	d.p.step("prometheus")
	srv, err := promrun.New(filepath.Join(d.dir, "prometheus"))
	if err != nil {
		return "", err
	}
	series := 0
	srv.Progress = func(done, total int) { d.p.update("promtool: %d/%d two-hour blocks", done, total) }
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		err := fl.f.WriteOpenMetrics(bw, func(done, total int) {
			series = total
			d.p.update("writing metrics: %d%% of %d series", 100*done/max(total, 1), total)
		})
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
		wrote <- err
	}()
	err = srv.Backfill(ctx, pr)
	pr.CloseWithError(errors.New("backfill stopped")) // unblocks the writer if the backfill gave up early
	if werr := <-wrote; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return "", err
	}
	if err := srv.Start(ctx); err != nil {
		return "", err
	}
	d.atExit(srv.Stop)
	d.p.done("%d series backfilled with promtool; serving on %s", series, srv.URL)
	return srv.URL, nil
}

// fmtSpan shows a window length as "3h" or "90m".
func fmtSpan(d time.Duration) string {
	d = d.Round(time.Minute)
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

// thousands writes n with thousands separators: 58,977.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fmtTime shows a time as the on-call reads it: UTC, to the second.
func fmtTime(t time.Time) string { return t.UTC().Format("15:04:05Z") }

// describeTruth says what was injected, in one line.
func describeTruth(t sim.Truth) string {
	parts := []string{}
	for _, kv := range [][2]string{{"model", t.Target.Model}, {"version", t.Target.Version}, {"tenant", t.Target.Tenant},
		{"replica", t.Target.Replica}, {"node", t.Target.Node}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	s := t.Category
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if t.Onset != nil {
		s += ", onset " + fmtTime(*t.Onset)
	}
	return s
}
