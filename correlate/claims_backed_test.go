package correlate

import (
	"strings"
	"testing"
	"time"
)

// untimedFixture: a model whose servers do not time the batch wait, the
// queue or exec (0 throughout, as such servers report them), whose tail
// grew in the gateway, after a batching config change.
func untimedFixture() *fixture {
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, func(s *Sample, _ bool) {
		s.BatchSize = 4
		for st := range s.StagesMs {
			s.StagesMs[st] = 0
		}
		s.StagesMs[StagePostprocess] = 50
		s.StagesMs[StageGateway] = s.TotalMs - 50
	})
	x.events = []Event{{ID: "cfg", Kind: KindConfigChange, Time: x.onset.Add(-3 * time.Minute), Scope: Scope{Model: "m"},
		Summary: "max_queue_delay_microseconds 100 -> 5000"}}
	return x
}

// A stage a server does not time reads 0 % of the growth; that is no
// evidence. The batching cause must not say the batch wait explains none
// of the growth, nor the ingress cause that the model servers' stages
// stayed flat.
func TestUntimedStagesAreNotReadAsFlat(t *testing.T) {
	t.Parallel()
	a := untimedFixture().analyze()
	for _, c := range a.Causes {
		switch c.Category {
		case CatBatching:
			if strings.Contains(c.Summary, "none of") || strings.Contains(c.Summary, "only 0%") || !strings.Contains(c.Summary, "not measured") {
				t.Errorf("batching summary %q, want it to say the batch wait is not measured", c.Summary)
			}
		case CatIngress:
			if names(c.Evidence)["model_servers_unchanged"] {
				t.Errorf("ingress evidence %+v: untimed model-server stages read as unchanged", c.Evidence)
			}
		}
	}
}

// A replica that carried three times the average load before the spike
// and during it: the spread did not change, but it was never "balanced".
func TestRoutingDoesNotCallASteadySkewBalanced(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 400)
	x.replica("m", "hot", "n1", 100, 400, 30, 30)
	for _, r := range []string{"a", "b", "c", "d"} {
		x.replica("m", r, "n2", 100, 400, 7.5, 7.5)
	}
	rt := causeOf(t, x.analyze(), CatRouting)
	for _, e := range rt.CounterEvidence {
		if strings.Contains(e.Summary, "balanced") {
			t.Errorf("counter-evidence %q: the busiest replica carried ~2.7× the average throughout", e.Summary)
		}
	}
	if !names(rt.CounterEvidence)["traffic_balanced"] {
		t.Errorf("counter-evidence %+v, want the unchanged spread listed", rt.CounterEvidence)
	}
}

// Every replica of the model is new (a fresh rollout) and one stands out:
// with no warm replica to compare with, youth cannot be what tells it
// from the others, so the local cause is not argued away by it.
func TestLocalDoesNotBlameYouthWithoutWarmReplicas(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 250)
	for _, r := range []struct {
		name   string
		during float64
	}{{"a", 100}, {"b", 100}, {"c", 100}, {"sick", 600}} {
		x.replica("m", r.name, "node-"+r.name, 100, r.during, 10, 10)
		x.events = append(x.events, Event{ID: "start-" + r.name, Kind: KindReplicaStart, Time: x.onset.Add(-4 * time.Minute),
			Scope: Scope{Model: "m", Replica: r.name}})
	}
	f := x.facts()
	young := 0
	for _, r := range f.reps["m"] {
		if r.young {
			young++
		}
	}
	if young != 4 {
		t.Fatalf("%d of 4 replicas young; the fixture wants all", young)
	}
	loc := causeOf(t, x.analyze(), CatLocalReplica)
	if names(loc.CounterEvidence)["outliers_are_new"] {
		t.Errorf("local counter-evidence %+v blames youth with no warm replica to compare", loc.CounterEvidence)
	}
}

// Samples that time only the model's execution (every other stage 0) say
// nothing of the downstream call or the front stages: neither is "did not
// grow", the coverage does not list them as present, and ingress is not
// opposed by growth "behind the gateway" it cannot compare with.
func TestStagesReportedAsZeroAreNotTimed(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 400)
	x.sampleRun(20, Scope{Model: "m", Version: "v1", Replica: "r"}, 100, 400, func(s *Sample, _ bool) {
		for st := range s.StagesMs {
			s.StagesMs[st] = 0
		}
		s.StagesMs[StageExec] = s.TotalMs
	})
	a := x.analyze()
	present, _, _ := strings.Cut(a.Coverage.Summary, "Missing:")
	if strings.Contains(present, "downstream call time") || strings.Contains(present, "gateway, auth and route times") {
		t.Errorf("coverage %q lists stages that were never timed as present", a.Coverage.Summary)
	}
	for _, c := range a.Causes {
		for _, e := range allEvidence(c) {
			if e.Name == "growth_behind_the_front" || strings.Contains(e.Summary, "did not grow") {
				t.Errorf("%s: %s %q reads an untimed stage as flat", c.Category, e.Name, e.Summary)
			}
		}
		if (c.Category == CatDownstream || c.Category == CatIngress) && strings.Contains(c.Summary, "did not grow") {
			t.Errorf("%s summary %q reads an untimed stage as flat", c.Category, c.Summary)
		}
	}
}

// The busiest replica went from the average to 1.4× it: too mild a skew
// for routing to be claimed, but the summary said the traffic "stayed
// spread over its replicas (the busiest at 1.4× the average, from
// 1.0×)", its own numbers saying otherwise.
func TestRoutingDoesNotCallAShiftSpread(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("m", 100, 400)
	x.replica("m", "a", "n1", 100, 400, 10, 14)
	x.replica("m", "b", "n2", 100, 400, 10, 8)
	x.replica("m", "c", "n3", 100, 400, 10, 8)
	rt := causeOf(t, x.analyze(), CatRouting)
	dumpCause(t, rt)
	if strings.Contains(rt.Summary, "stayed spread") {
		t.Errorf("summary %q: the busiest replica went from 1.0× to 1.4× the average", rt.Summary)
	}
}
