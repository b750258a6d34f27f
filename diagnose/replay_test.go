package diagnose_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/wire"
)

// bundle is one incident to replay: metrics (OpenMetrics), pushed events,
// samples, the window and what really happened.
type bundle struct {
	name       string
	start, end time.Time
	metrics    func() io.Reader
	events     []correlate.Event
	samples    []correlate.Sample
	truth      truth
}

type truth struct {
	Category string           `json:"category"`
	Target   correlate.Target `json:"target"`
	Onset    *time.Time       `json:"onset"`
}

// replay runs a bundle through the real stack — Prometheus backfilled with
// promtool, the pull into Postgres, the analysis — and judges it the way
// the acceptance check does: a spike within five minutes of the true
// onset (none after the first hour for a quiet fleet), the right category
// ranked first with the right target.
func replay(t *testing.T, b bundle) {
	t.Helper()
	replayFrom(t, b, func(t *testing.T, om io.Reader) string { return promtest.Run(t, om).URL })
}

// replayFrom is replay with the metrics loaded by load into a
// Prometheus-compatible server, whose base URL it returns.
func replayFrom(t *testing.T, b bundle, load func(t *testing.T, om io.Reader) string) {
	t.Helper()
	ctx := context.Background()
	promURL := load(t, b.metrics())
	st := storetest.New(t)
	if _, _, err := st.InsertEvents(ctx, b.events); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.InsertSamples(ctx, b.samples); err != nil {
		t.Fatal(err)
	}
	cfg, err := pull.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pull.New(cfg, pull.Backend{URL: promURL}, st, pull.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.History(ctx, b.start, b.end, nil); err != nil {
		t.Fatalf("pull: %v", err)
	}
	spikes, err := diagnose.Spikes(ctx, st, diagnose.SpikeQuery{From: b.start, To: b.end}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.truth.Category == "none" {
		for _, s := range spikes {
			if !s.Onset.Before(b.start.Add(time.Hour)) {
				t.Errorf("quiet fleet: spike on %s %s at %s (%.0f → %.0f)", s.Scope.Model, s.Role, s.Onset, s.Baseline, s.PeakValue)
			}
		}
		return
	}
	onset := *b.truth.Onset
	near := false
	for _, s := range spikes {
		if d := s.Onset.Sub(onset); d >= -5*time.Minute && d <= 5*time.Minute {
			near = true
		}
	}
	if !near {
		t.Errorf("no spike within 5 minutes of the onset %s (found %d spikes)", onset, len(spikes))
	}
	end := onset.Add(45 * time.Minute)
	if end.After(b.end) {
		end = b.end
	}
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: b.name, Start: onset.Add(-90 * time.Minute), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{}).Analyze(ctx, in.ID, false)
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	var a correlate.Analysis
	if err := json.Unmarshal(rec.Result, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Causes) == 0 {
		t.Fatal("no causes")
	}
	top := a.Causes[0]
	if string(top.Category) != b.truth.Category {
		var rank []string
		for _, c := range a.Causes[:min(4, len(a.Causes))] {
			rank = append(rank, string(c.Category))
		}
		t.Fatalf("top cause %s (%.2f), want %s; ranking %v", top.Category, top.Score, b.truth.Category, rank)
	}
	if !sim.TargetMatches(b.truth.Category, b.truth.Target, top.Target) {
		t.Errorf("%s target %+v, want %+v", top.Category, top.Target, b.truth.Target)
	}
}

// TestReplaySimulatedIncidents replays one incident of every category (and
// a quiet fleet) from our own simulator, with innocent changes around the
// onset. It always runs: the bundles are generated.
func TestReplaySimulatedIncidents(t *testing.T) {
	if testing.Short() {
		t.Skip("a replay of whole incident bundles: -short leaves it out (make test runs it in a pass of its own, without -race)")
	}
	t.Parallel()
	for _, sc := range sim.Scenarios {
		// One case at a time: each runs a real Prometheus and Postgres
		// database, and CI has two cores.
		t.Run(string(sc), func(t *testing.T) {
			f, err := sim.New(sim.Options{Seed: 21, Scenario: sc, Confounders: true, Duration: 150 * time.Minute, Onset: 105 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var om bytes.Buffer
			if err := f.WriteOpenMetrics(&om, nil); err != nil {
				t.Fatal(err)
			}
			tr := f.Truth()
			b := bundle{name: string(sc), start: f.Description().Start, end: f.Description().End,
				metrics: func() io.Reader { return bytes.NewReader(om.Bytes()) }, events: f.Events()}
			for s := range f.Samples() {
				b.samples = append(b.samples, s)
			}
			b.truth = truth{Category: tr.Category, Onset: tr.Onset, Target: tr.Target}
			replay(t, b)
		})
	}
}

// TestReplayPublicBundles replays the product's shared incident bundles
// when they are present (CI has them; a user's clone does not).
func TestReplayPublicBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("a replay of whole incident bundles: -short leaves it out (make test runs it in a pass of its own, without -race)")
	}
	t.Parallel()
	dir := os.Getenv("WATERLINE_SCENARIOS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "scenarios")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("shared incident bundles not found at %s (set WATERLINE_SCENARIOS): %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			replay(t, loadBundle(t, filepath.Join(dir, name)))
		})
	}
}

// loadBundle reads a bundle directory in the shared layout.
func loadBundle(t *testing.T, dir string) bundle {
	t.Helper()
	var meta struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	}
	readJSON(t, filepath.Join(dir, "scenario.json"), &meta)
	b := bundle{name: filepath.Base(dir), start: meta.Start, end: meta.End}
	readJSON(t, filepath.Join(dir, "truth.json"), &b.truth)
	b.metrics = func() io.Reader {
		f, err := os.Open(filepath.Join(dir, "metrics.om.gz"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		return gz
	}
	eventsRaw, err := os.ReadFile(filepath.Join(dir, "events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(eventsRaw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e correlate.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		b.events = append(b.events, e)
	}
	f, err := os.Open(filepath.Join(dir, "samples.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc2 := bufio.NewScanner(gz)
	sc2.Buffer(make([]byte, 1<<20), 1<<20)
	for sc2.Scan() {
		s, err := wire.DecodeSample(sc2.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		s.SampleRate = max(s.SampleRate, 1)
		b.samples = append(b.samples, s)
	}
	if err := sc2.Err(); err != nil {
		t.Fatal(err)
	}
	return b
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
