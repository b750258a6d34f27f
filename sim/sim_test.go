package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// render produces every output of a fleet as bytes.
func render(t *testing.T, o Options) (om, samples, events, truth []byte) {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var a, b, c bytes.Buffer
	if err := f.WriteOpenMetrics(&a, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteSamplesNDJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteEventsNDJSON(&c); err != nil {
		t.Fatal(err)
	}
	tr, err := json.Marshal(f.Truth())
	if err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes(), c.Bytes(), tr
}

func TestDeterministic(t *testing.T) {
	o := Small(5, Release)
	o.Confounders = true
	om1, s1, e1, t1 := render(t, o)
	om2, s2, e2, t2 := render(t, o)
	for name, pair := range map[string][2][]byte{"metrics": {om1, om2}, "samples": {s1, s2}, "events": {e1, e2}, "truth": {t1, t2}} {
		if sha256.Sum256(pair[0]) != sha256.Sum256(pair[1]) {
			t.Errorf("%s differ between two runs with the same seed", name)
		}
	}
	o.Seed = 6
	om3, s3, _, _ := render(t, o)
	if bytes.Equal(om1, om3) || bytes.Equal(s1, s3) {
		t.Error("a different seed gave the same outputs")
	}
}

func TestOptionsValidation(t *testing.T) {
	bad := []Options{
		{Step: 500 * time.Millisecond},
		{Duration: time.Minute},
		{Scenario: "meteor"},
		{Onset: 4 * time.Hour},
		{Strength: 9},
		{Models: 9},
		{Tenants: 99},
		{Scenario: Release, Target: "no-such-model"},
		{Scenario: LocalReplica, Target: "no-such-node"},
		{Models: 6, ReplicasPerModel: 8, Nodes: 2},
	}
	for _, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := f.Options()
	if n.Duration != 3*time.Hour || n.Step != 15*time.Second || n.Scenario != None || !n.Start.Equal(DefaultStart) || n.Models != 4 {
		t.Errorf("defaults: %+v", n)
	}
	for _, sc := range Scenarios {
		if _, err := ParseScenario(string(sc)); err != nil {
			t.Error(err)
		}
	}
}

// A named target is honoured.
func TestTargetOption(t *testing.T) {
	f, err := New(Options{Scenario: Batching, Target: "vision-detect", Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.truth.Target.Model; got != "vision-detect" {
		t.Errorf("target %q", got)
	}
	f, err = New(Options{Scenario: LocalReplica, Target: "gpu-a100-02", Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.truth.Target.Node; got != "gpu-a100-02" {
		t.Errorf("target node %q", got)
	}
}

func TestTruthAndDescription(t *testing.T) {
	for _, sc := range Scenarios {
		out := generate(t, Small(21, sc))
		tr, d := out.truth, out.desc
		if tr.Category != string(sc) {
			t.Errorf("%s: category %q", sc, tr.Category)
		}
		if sc == None {
			continue
		}
		if tr.Onset == nil || tr.Onset.Before(d.Start) || tr.Onset.After(d.End) {
			t.Errorf("%s: onset %v outside %v..%v", sc, tr.Onset, d.Start, d.End)
		}
		if tr.ChangeTime == nil || tr.ChangeTime.After(*tr.Onset) {
			t.Errorf("%s: change %v after effect %v", sc, tr.ChangeTime, tr.Onset)
		}
		if tr.Target.Model == "" && tr.Target.Node == "" && len(tr.Target.Models) == 0 && sc != Ingress {
			t.Errorf("%s: empty target", sc)
		}
		if len(tr.Notes) == 0 {
			t.Errorf("%s: no notes", sc)
		}
	}
	out := generate(t, Small(21, Release))
	b, _ := json.Marshal(out.desc)
	for _, k := range []string{`"start"`, `"end"`, `"step_seconds":15`, `"slo_ms"`, `"tier"`, `"entry"`, `"nodes"`, `"tenants"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("description lacks %s: %s", k, b)
		}
	}
	if out.desc.Samples != len(out.samples) || out.desc.Events != len(out.events) {
		t.Errorf("description counts %d/%d, outputs %d/%d", out.desc.Samples, out.desc.Events, len(out.samples), len(out.events))
	}
	b, _ = json.Marshal(out.truth)
	for _, k := range []string{`"category":"release"`, `"target":{"model"`, `"onset":"`, `"recovered":null`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("truth lacks %s: %s", k, b)
		}
	}
}

// EffectDuration ends a cause: a release is rolled back, with a pushed
// rollback event, and the truth says when it recovered.
func TestEffectDurationRecovers(t *testing.T) {
	o := Small(4, Release)
	o.EffectDuration = 4 * time.Minute
	out := generate(t, o)
	if out.truth.Recovered == nil || !out.truth.Recovered.After(*out.truth.Onset) {
		t.Fatalf("recovered %v", out.truth.Recovered)
	}
	var rollback bool
	for _, e := range out.events {
		rollback = rollback || e.Kind == "rollback" && e.Model == out.truth.Target.Model
	}
	if !rollback {
		t.Error("no rollback event")
	}
	late := out.sel(and(between(out.truth.Recovered.Add(time.Minute), out.desc.End), ofModel(out.truth.Target.Model)))
	for _, s := range late {
		if s.Version == out.truth.Target.Version {
			t.Fatalf("sample %s on the rolled-back version after recovery", s.RequestID)
		}
	}
}

func TestSamplesWireFormat(t *testing.T) {
	out := generate(t, Small(21, Capacity))
	if len(out.samples) < 1000 {
		t.Fatalf("only %d samples", len(out.samples))
	}
	slo := map[string]float64{}
	for _, m := range out.desc.Models {
		slo[m.Name] = m.SLOMs
	}
	lines := bytes.Split(bytes.TrimSpace(out.ndjson), []byte("\n"))
	ids := map[string]bool{}
	var prev time.Time
	tail, head := 0, 0
	for i, s := range out.samples {
		var raw map[string]any
		_ = json.Unmarshal(lines[i], &raw)
		for _, k := range []string{"request_id", "time", "model", "version", "tenant", "replica", "node", "entry", "status", "total_ms", "stages_ms", "sample_rate"} {
			if _, ok := raw[k]; !ok {
				t.Fatalf("line %d lacks %s: %s", i+1, k, lines[i])
			}
		}
		ts := raw["time"].(string)
		if len(ts) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(ts, "Z") {
			t.Fatalf("time %q is not RFC 3339 UTC with milliseconds", ts)
		}
		if ids[s.RequestID] {
			t.Fatalf("duplicate request_id %s", s.RequestID)
		}
		ids[s.RequestID] = true
		if s.Time.Before(prev) {
			t.Fatalf("samples out of time order at line %d", i+1)
		}
		prev = s.Time
		if s.Time.Before(out.desc.Start) || s.Time.After(out.desc.End) {
			t.Fatalf("sample time %v outside the window", s.Time)
		}
		sum, reported := 0.0, 0
		for k, v := range s.StagesMs {
			if math.IsNaN(v) {
				continue
			}
			sum += v
			reported++
			if v < 0 {
				t.Fatalf("negative stage %s", correlate.Stage(k))
			}
		}
		want := 8
		if s.Status == "timeout" {
			want = 5
		} else if s.BatchSize < 1 {
			t.Fatalf("completed request without batch size: %s", lines[i])
		}
		if reported != want {
			t.Fatalf("%d stages for a %s request: %s", reported, s.Status, lines[i])
		}
		if d := s.TotalMs - sum; d > 0.01 || d < -0.01 {
			t.Fatalf("total %v != sum of stages %v", s.TotalMs, sum)
		}
		if s.SampleRate < 1 {
			t.Fatalf("sample_rate %v", s.SampleRate)
		}
		if s.TotalMs > slo[s.Model] {
			tail++
			if s.SampleRate != 2 {
				t.Fatalf("slow sample kept at 1 in %v, want the tail rate 2", s.SampleRate)
			}
		} else {
			head++
			if s.SampleRate <= 2 {
				t.Fatalf("fast sample kept at 1 in %v, want the head rate", s.SampleRate)
			}
		}
	}
	if tail == 0 || head == 0 {
		t.Errorf("head %d tail %d", head, tail)
	}
}

func TestEventsPushedOnly(t *testing.T) {
	for _, sc := range Scenarios {
		o := Small(21, sc)
		o.Confounders = true
		out := generate(t, o)
		seen := map[string]bool{}
		for _, e := range out.events {
			switch e.Kind {
			case "deploy", "rollback", "config_change", "route_change":
			default:
				t.Errorf("%s: event kind %s is never pushed", sc, e.Kind)
			}
			if e.ID == "" || seen[e.ID] {
				t.Errorf("%s: event id %q empty or duplicated", sc, e.ID)
			}
			seen[e.ID] = true
			if e.Time.Before(out.desc.Start) || e.Time.After(out.desc.End) {
				t.Errorf("%s: event at %v outside the window", sc, e.Time)
			}
		}
		if len(out.events) < 3 {
			t.Errorf("%s: confounders pushed only %d events", sc, len(out.events))
		}
		if id := out.truth.CauseEventID; id != "" && !seen[id] {
			t.Errorf("%s: cause event %s not pushed", sc, id)
		}
		o.HideCauseEvent = true
		hidden := generate(t, o)
		if id := hidden.truth.CauseEventID; id != "" {
			for _, e := range hidden.events {
				if e.ID == id {
					t.Errorf("%s: hidden cause event %s pushed", sc, id)
				}
			}
			if !hidden.truth.CauseEventHidden {
				t.Errorf("%s: truth does not say the event was hidden", sc)
			}
		}
	}
}
