package views

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./web/ui -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Fatalf("%s differs from the golden file; see %s.got (go test -update accepts it)", name, path)
	}
}

func fixtureIncident() (IncidentInput, correlate.Analysis) {
	onset := t0.Add(40 * time.Minute)
	end := t0.Add(time.Hour)
	peakAt, recovered, share := onset.Add(5*time.Minute), onset.Add(15*time.Minute), 0.7
	a := correlate.Analysis{
		Onset:  &onset,
		Spikes: []correlate.Spike{{Start: onset, End: onset.Add(15 * time.Minute)}},
		Scope:  correlate.ScopeReport{Breadth: "version", Summary: "Only chat v2 slowed down.", Models: []string{"chat"}},
		Causes: []correlate.Cause{{Category: correlate.CatRelease, Score: 0.9, Target: correlate.Target{Model: "chat", Version: "v2"},
			Summary: "chat v2 is slower than v1.", Evidence: []correlate.Evidence{{Name: "new_version_slower", Summary: "v2 P99 ×3 <v1>", Value: 3, Strength: 1}},
			CounterEvidence: []correlate.Evidence{{Name: "traffic_flat", Summary: "Traffic | flat", Value: 1.02, Strength: 0.2}},
			Actions:         []string{"Roll back chat to v1"}}},
		Stages:        []correlate.StageShare{{Stage: "exec", BeforeMs: 40, DuringMs: 120, DeltaMs: 80, DeltaLoMs: 70, DeltaHiMs: 90, Share: 1}},
		StageSource:   "samples",
		Concentration: []correlate.Concentration{{Dims: map[string]string{"version": "v2"}, SelectionPct: 90, BaselinePct: 20, RiskRatio: 12, Support: 0.9, Models: []string{"chat"}, P99Ms: 850, P99WithoutMs: 150, P99DeltaMs: 700, TailShare: 0.92}},
		Events: []correlate.AlignedEvent{{Event: correlate.Event{Kind: correlate.KindDeploy, Time: onset.Add(-2 * time.Minute),
			Scope: correlate.Scope{Model: "chat", Version: "v2"}}, OffsetS: -120, TimeWeight: 0.9, ScopeMatch: 1}},
		P99BeforeMs: 200, P99DuringMs: 850,
		Headline: correlate.Headline{Model: "chat", Title: "P99 latency up ×4.3 on chat", Summary: "chat: P99 200 ms → 850 ms."},
		Impact: []correlate.Impact{{Model: "chat", BaselineP99Ms: 200, DuringP99Ms: 850, PeakP99Ms: 1310, PeakAt: &peakAt, NowP99Ms: 210,
			Rise: 4.25, Status: "recovered", RecoveredAt: &recovered, SlowRequests: 1234,
			Tenants: []correlate.ScopeEntry{{Name: "t-<1>", SlowShare: &share}}}},
		Samples:        correlate.SampleSummary{Total: 5000, Slow: 300, SlowRequests: 1234},
		Reconciliation: "Traffic rose ×1.4, but only chat v2's requests slowed.",
		Checklist: []correlate.ChecklistStep{{Step: "scope", Answer: "chat v2."}, {Step: "timeline", Answer: "Latency rose at 10:40:00 UTC. Deploy 2 min before.", Evidence: "new_version_slower", Curve: "p99"},
			{Step: "samples", Answer: "1,234 slow requests. exec grew.", Row: map[string]string{"version": "v2"}}, {Step: "action", Answer: "Roll back."}},
	}
	inc := store.Incident{ID: 7, Title: "chat slow <after> deploy", Status: "open", Source: "manual", Start: t0, End: &end}
	return IncidentInput{Incident: inc, Analysis: &a, Status: "ready", Version: 2, ComputedAt: t0.Add(50 * time.Minute),
		State: State{Base: "/incidents/7"}, CanWrite: true, ShareURL: "http://w.test/s/abc", Now: t0.Add(55 * time.Minute)}, a
}

func TestIncidentPageGolden(t *testing.T) {
	in, a := fixtureIncident()
	p := BuildIncident(in)
	p.CSRF = "csrf-token"
	curves := []correlate.Curve{
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "chat"}, "", func(i int) float64 { return 200 + float64(i%5) }),
		curve(correlate.RoleQPS, correlate.LevelModel, correlate.Scope{Model: "chat"}, "", func(i int) float64 { return 50 }),
	}
	p.Filtered = Filtered{Base: "/incidents/7", Timeline: BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute,
		Curves: curves, Onset: a.Onset, Spikes: a.Spikes, State: in.State, Target: "#filtered",
		Events: []correlate.Event{a.Events[0].Event}}),
		Conc:    BuildConc(a.Concentration, in.State, &a),
		Samples: BuildSampleTable(SampleTableInput{State: in.State, SlowMs: map[string]float64{"chat": 400}})}
	var buf bytes.Buffer
	// The body only: the layout links assets by content hash, which would
	// make every stylesheet change a golden-file change.
	if err := IncidentBody(p).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "incident.html", buf.Bytes())
}

func TestMarkdownGolden(t *testing.T) {
	in, a := fixtureIncident()
	md := Markdown(MarkdownInput{Incident: in.Incident, Analysis: &a, Version: 2, Permalink: "http://w.test/incidents/7", Now: in.Now})
	golden(t, "incident.md", []byte(md))
}
