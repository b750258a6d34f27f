package correlate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// scenario injects one cause into a test fleet and says what the analysis
// must conclude: the category ranked first, its target, and the evidence
// items that make up the category's signature.
type scenario struct {
	name     string
	setup    func(f *testFleet)
	want     correlate.Category
	target   correlate.Target
	evidence []string // names that must all be present on the top cause
}

func scenarios() []scenario {
	ev := func(f *testFleet, kind correlate.EventKind, lead time.Duration, sc correlate.Scope, summary string) {
		f.events = append(f.events, correlate.Event{ID: string(kind) + sc.String() + summary, Kind: kind,
			Time: f.at(f.onset).Add(-lead), Scope: sc, Summary: summary, Source: "test"})
	}
	return []scenario{
		{
			name: "release",
			setup: func(f *testFleet) {
				m := f.model("vision")
				// A rollout: two v2 pods replace two v1 pods just before the onset.
				for i, old := range m.replicas[1:] {
					nr := &testReplica{name: "vision-new-" + string(rune('a'+i)), node: old.node, version: "v2", startStep: f.onset - 4, share: 1.0 / 3}
					m.replicas = append(m.replicas, nr)
				}
				base := f.traffic
				f.traffic = func(m *testModel, r *testReplica, step int) float64 {
					if m.name == "vision" && r.version == "v1" && r.name != "vision-0" && step >= f.onset-4 {
						return 0
					}
					return base(m, r, step)
				}
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					if r.version == "v2" {
						rq.stages[correlate.StageExec] *= 2.2
						rq.stages[correlate.StageQueue] *= 4
					}
				}
				ev(f, correlate.KindDeploy, 90*time.Second, correlate.Scope{Model: "vision", Version: "v2"}, "rollout vision v1 -> v2")
			},
			want:     correlate.CatRelease,
			target:   correlate.Target{Model: "vision", Version: "v2"},
			evidence: []string{"deploy_before_onset", "new_version_slower", "only_this_model"},
		},
		{
			name: "capacity",
			setup: func(f *testFleet) {
				base := f.traffic
				f.traffic = func(m *testModel, r *testReplica, step int) float64 {
					if step >= f.onset {
						return 2.4 * base(m, r, step)
					}
					return base(m, r, step)
				}
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					rq.stages[correlate.StageQueue] *= 9
					rq.stages[correlate.StageExec] *= 1.1
				}
				// An innocent deploy of another model a few minutes before the peak.
				ev(f, correlate.KindDeploy, 4*time.Minute, correlate.Scope{Model: "rerank", Version: "v1.1"}, "rollout rerank v1 -> v1.1")
			},
			want:     correlate.CatCapacity,
			target:   correlate.Target{Models: []string{"chat", "rerank", "vision"}},
			evidence: []string{"traffic_up", "queue_growth", "several_models"},
		},
		{
			name: "local_node",
			setup: func(f *testFleet) {
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					if r.node == "node-2" {
						rq.stages[correlate.StageExec] *= 2.5
						rq.stages[correlate.StageQueue] *= 8
					}
				}
			},
			want:     correlate.CatLocalReplica,
			target:   correlate.Target{Node: "node-2"},
			evidence: []string{"replica_outlier", "slow_requests_concentrated", "same_node"},
		},
		{
			name: "batching",
			setup: func(f *testFleet) {
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					if m.name == "chat" {
						rq.stages[correlate.StageBatchWait] *= 40
					}
				}
				ev(f, correlate.KindConfigChange, 30*time.Second, correlate.Scope{Model: "chat"}, "max_queue_delay 5ms -> 200ms")
			},
			want:     correlate.CatBatching,
			target:   correlate.Target{Model: "chat"},
			evidence: []string{"batch_wait_growth", "batching_config_change"},
		},
		{
			name: "cold_start",
			setup: func(f *testFleet) {
				m := f.model("chat")
				for i := 0; i < 2; i++ {
					nr := &testReplica{name: "chat-new-" + string(rune('a'+i)), node: "node-4", version: "v1", startStep: f.onset, share: 1.0 / 3}
					m.replicas = append(m.replicas, nr)
					ev(f, correlate.KindReplicaStart, 20*time.Second, correlate.Scope{Model: "chat", Version: "v1", Replica: nr.name, Node: nr.node}, "pod started")
				}
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					if strings.HasPrefix(r.name, "chat-new") && step < f.onset+40 {
						rq.stages[correlate.StageExec] *= 6
						rq.stages[correlate.StageQueue] *= 5
					}
				}
				ev(f, correlate.KindScaleUp, 40*time.Second, correlate.Scope{Model: "chat"}, "desired replicas 3 -> 5")
			},
			want:     correlate.CatColdStart,
			target:   correlate.Target{Model: "chat", Replicas: []string{"chat-new-a", "chat-new-b"}},
			evidence: []string{"scale_up", "new_replicas", "slow_requests_on_new_replicas"},
		},
		{
			name: "downstream",
			setup: func(f *testFleet) {
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					rq.stages[correlate.StageDownstream] *= 12
				}
			},
			want:     correlate.CatDownstream,
			target:   correlate.Target{Models: []string{"rerank"}},
			evidence: []string{"downstream_growth", "downstream_curve_up"},
		},
		{
			name: "routing",
			setup: func(f *testFleet) {
				base := f.traffic
				f.traffic = func(m *testModel, r *testReplica, step int) float64 {
					if m.name == "chat" && step >= f.onset {
						if r.name == "chat-0" {
							return 3 * 40 * 0.7
						}
						return 3 * 40 * 0.15
					}
					return base(m, r, step)
				}
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					if r.name == "chat-0" {
						rq.stages[correlate.StageQueue] *= 12
					}
				}
				ev(f, correlate.KindRouteChange, time.Minute, correlate.Scope{Model: "chat"}, "routing policy chat: round-robin -> sticky")
			},
			want:     correlate.CatRouting,
			target:   correlate.Target{Model: "chat", Replicas: []string{"chat-0"}},
			evidence: []string{"traffic_skew", "busy_replicas_slow", "routing_change"},
		},
		{
			name: "ingress",
			setup: func(f *testFleet) {
				f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
					rq.stages[correlate.StageGateway] *= 50
				}
			},
			want:     correlate.CatIngress,
			target:   correlate.Target{},
			evidence: []string{"gateway_growth", "all_models"},
		},
	}
}

// TestCategorySignatures pins what each category looks like: the analysis
// of a fleet with that cause injected ranks it first, names the right
// target and cites the category's signature evidence.
func TestCategorySignatures(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			f := newTestFleet(1)
			sc.setup(f)
			a := correlate.Analyze(f.build())
			checkTop(t, a, sc)
		})
	}
}

func checkTop(t *testing.T, a correlate.Analysis, sc scenario) {
	t.Helper()
	if len(a.Causes) == 0 {
		t.Fatalf("no causes")
	}
	top := a.Causes[0]
	if top.Category != sc.want {
		t.Fatalf("top cause %s (%.2f), want %s; ranking: %s", top.Category, top.Score, sc.want, ranking(a))
	}
	if top.Score < 0.5 {
		t.Errorf("top score %.2f, want a confident ≥ 0.5", top.Score)
	}
	got := top.Target
	slices.Sort(got.Replicas)
	slices.Sort(got.Models)
	want := sc.target
	if got.Model != want.Model || got.Version != want.Version || got.Node != want.Node ||
		(want.Replicas != nil && !slices.Equal(got.Replicas, want.Replicas)) || (want.Models != nil && !slices.Equal(got.Models, want.Models)) {
		t.Errorf("target %+v, want %+v", got, want)
	}
	names := map[string]bool{}
	for _, e := range top.Evidence {
		names[e.Name] = true
		if e.Summary == "" || e.Strength <= 0 || e.Weight <= 0 {
			t.Errorf("evidence %q is not explained: %+v", e.Name, e)
		}
	}
	for _, n := range sc.evidence {
		if !names[n] {
			t.Errorf("top cause lacks evidence %q; has %v", n, keys(names))
		}
	}
	if len(top.Actions) == 0 {
		t.Errorf("no action suggested")
	}
	// Explainability: the score is the evidence minus the counter-evidence.
	var sum float64
	for _, e := range top.Evidence {
		sum += e.Weight * e.Strength
	}
	for _, e := range top.CounterEvidence {
		sum -= e.Weight * e.Strength
	}
	if sum > 1 {
		sum = 1
	}
	if d := sum - top.Score; d > 0.06 || d < -0.06 {
		t.Errorf("score %.3f is not the sum of its listed evidence (%.3f)", top.Score, sum)
	}
}

func ranking(a correlate.Analysis) string {
	var parts []string
	for _, c := range a.Causes {
		parts = append(parts, fmt.Sprintf("%s=%.2f", c.Category, c.Score))
	}
	return strings.Join(parts, " ")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestQuietFleetIsUnexplained: with nothing injected, nothing is blamed.
func TestQuietFleetIsUnexplained(t *testing.T) {
	t.Parallel()
	f := newTestFleet(2)
	a := correlate.Analyze(f.build())
	if a.Causes[0].Category != correlate.CatUnexplained {
		t.Fatalf("quiet fleet: top cause %s (%.2f), want unexplained; %s", a.Causes[0].Category, a.Causes[0].Score, ranking(a))
	}
	if a.Onset != nil {
		t.Errorf("quiet fleet: onset %v, want none", a.Onset)
	}
	if len(a.Spikes) != 0 {
		t.Errorf("quiet fleet: %d spikes", len(a.Spikes))
	}
}

// TestHardCases covers inputs the analysis must survive with a sensible
// answer: missing samples, missing curves, gaps, a single replica.
func TestHardCases(t *testing.T) {
	t.Parallel()
	byName := map[string]scenario{}
	for _, sc := range scenarios() {
		byName[sc.name] = sc
	}
	t.Run("NoSamples", func(t *testing.T) {
		t.Parallel()
		sc := byName["batching"]
		f := newTestFleet(3)
		sc.setup(f)
		f.noSample = true
		in := f.build()
		a := correlate.Analyze(in)
		if a.StageSource != "curves" {
			t.Errorf("stage source %q, want curves", a.StageSource)
		}
		checkTop(t, a, scenario{want: sc.want, target: sc.target, evidence: []string{"batch_wait_growth"}})
		if !strings.Contains(a.Checklist[2].Answer, "No request samples") {
			t.Errorf("samples step should say there are none: %q", a.Checklist[2].Answer)
		}
	})
	t.Run("SamplesButNoCurves", func(t *testing.T) {
		t.Parallel()
		sc := byName["downstream"]
		f := newTestFleet(4)
		sc.setup(f)
		in := f.build()
		in.Curves = nil
		a := correlate.Analyze(in)
		if a.Onset == nil {
			t.Fatalf("no onset found from samples alone")
		}
		if d := a.Onset.Sub(f.at(f.onset)); d < -5*time.Minute || d > 5*time.Minute {
			t.Errorf("onset %v, %v from the truth", a.Onset, d)
		}
		checkTop(t, a, scenario{want: sc.want, target: sc.target, evidence: []string{"downstream_growth"}})
	})
	t.Run("GapBeforeOnset", func(t *testing.T) {
		t.Parallel()
		sc := byName["local_node"]
		f := newTestFleet(5)
		sc.setup(f)
		in := f.build()
		lo, hi := f.at(f.onset-60).UnixMilli(), f.at(f.onset-20).UnixMilli()
		for i := range in.Curves {
			pts := in.Curves[i].Points[:0]
			for _, p := range in.Curves[i].Points {
				if p.T < lo || p.T >= hi {
					pts = append(pts, p)
				}
			}
			in.Curves[i].Points = pts
		}
		checkTop(t, correlate.Analyze(in), sc)
	})
	t.Run("OneReplicaOnly", func(t *testing.T) {
		t.Parallel()
		f := newTestFleet(6)
		for i := range f.models {
			f.models[i].replicas = f.models[i].replicas[:1]
		}
		f.effect = func(f *testFleet, r *testReplica, m *testModel, step int, rq *testRequest) {
			if m.name == "vision" {
				rq.stages[correlate.StageBatchWait] *= 40
			}
		}
		a := correlate.Analyze(f.build())
		if !slices.Equal(a.Scope.Models, []string{"vision"}) {
			t.Errorf("scope models %v, want [vision]", a.Scope.Models)
		}
		if a.Causes[0].Category != correlate.CatBatching {
			t.Errorf("top %s, want batching; %s", a.Causes[0].Category, ranking(a))
		}
	})
	t.Run("NoDataAtAll", func(t *testing.T) {
		t.Parallel()
		w := correlate.Window{From: time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)}
		a := correlate.Analyze(correlate.Input{Window: w})
		if a.Causes[0].Category != correlate.CatUnexplained || a.Onset != nil {
			t.Errorf("empty input: top %s onset %v, want unexplained and none", a.Causes[0].Category, a.Onset)
		}
	})
}
