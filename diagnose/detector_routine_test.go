package diagnose_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// Routine operations of a healthy inference fleet, judged by the live
// detector with its production defaults (pages only, medium sensitivity),
// one pass per 15 s scrape: none of them may open an incident. The curves
// come from a request-level fixture: every request of every pod drawn
// (lognormal latency around the model's median), the model's P50/P95/P99
// the quantiles of the requests of the last minute (the presets'
// histogram_quantile over rate(…[1m])), its QPS their count per second.

const routineStep = 15 * time.Second

// routinePod is one pod of the model: in routing over [from, to), taking
// share of the traffic (relative to the other pods in routing), its
// latency × slow(age since from) (nil: ×1).
type routinePod struct {
	from, to time.Time
	share    float64
	slow     func(age time.Duration) float64
}

type routineFleet struct {
	seed       uint64
	start, end time.Time
	qps        func(t time.Time) float64 // the model's request rate
	medianMs   float64
	sigma      float64
	pods       []routinePod
	// gap: no point is stored in [gap[0], gap[1]) (Prometheus down).
	gap [2]time.Time
}

func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// curves returns the model-level P50, P95, P99 and QPS of model "chat".
func (f routineFleet) curves() []correlate.Curve {
	r := rand.New(rand.NewPCG(f.seed, f.seed^0x9e3779b9))
	sc := correlate.Scope{Model: "chat"}
	mk := func(role correlate.Role) correlate.Curve {
		return correlate.Curve{Role: role, Level: correlate.LevelModel, Scope: sc}
	}
	p50, p95, p99, qps := mk(correlate.RoleLatencyP50), mk(correlate.RoleLatencyP95), mk(correlate.RoleLatencyP99), mk(correlate.RoleQPS)
	var window [4][]float64 // the requests of the last four scrapes: a minute
	var buf []float64
	for i, ts := 0, f.start; ts.Before(f.end); i, ts = i+1, ts.Add(routineStep) {
		var live []routinePod
		total := 0.0
		for _, p := range f.pods {
			if !ts.Before(p.from) && ts.Before(p.to) {
				live, total = append(live, p), total+p.share
			}
		}
		reqs := window[i%4][:0]
		for _, p := range live {
			n := poisson(r, f.qps(ts)*routineStep.Seconds()*p.share/total)
			factor := 1.0
			if p.slow != nil {
				factor = p.slow(ts.Sub(p.from))
			}
			for range n {
				reqs = append(reqs, f.medianMs*math.Exp(f.sigma*r.NormFloat64())*factor)
			}
		}
		window[i%4] = reqs
		if !ts.Before(f.gap[0]) && ts.Before(f.gap[1]) {
			continue
		}
		buf = buf[:0]
		for _, w := range window {
			buf = append(buf, w...)
		}
		t := ts.UnixMilli()
		qps.Points = append(qps.Points, correlate.Point{T: t, V: float64(len(buf)) / 60})
		if len(buf) == 0 {
			continue // histogram_quantile over no request: NaN, which the pull drops
		}
		slices.Sort(buf)
		q := func(p float64) float64 {
			x := p * float64(len(buf)-1)
			lo := int(x)
			hi := min(lo+1, len(buf)-1)
			return buf[lo] + (buf[hi]-buf[lo])*(x-float64(lo))
		}
		p50.Points = append(p50.Points, correlate.Point{T: t, V: q(0.50)})
		p95.Points = append(p95.Points, correlate.Point{T: t, V: q(0.95)})
		p99.Points = append(p99.Points, correlate.Point{T: t, V: q(0.99)})
	}
	return []correlate.Curve{p50, p95, p99, qps}
}

// routineRun steps the detector, as serve runs it (defaults: pages only,
// medium sensitivity), one pass per scrape over [from, to], and returns the
// incidents it opened.
func routineRun(t *testing.T, st *store.Store, from, to time.Time, every time.Duration) []store.Incident {
	return routineRunWith(t, st, from, to, every, diagnose.DetectorOptions{})
}

// routineRunWith is routineRun with some options set (the rest as serve
// has them).
func routineRunWith(t *testing.T, st *store.Store, from, to time.Time, every time.Duration, opt diagnose.DetectorOptions) []store.Incident {
	t.Helper()
	ctx := context.Background()
	now := from
	opt.OpenIncidents, opt.Now = true, func() time.Time { return now }
	det := diagnose.NewDetector(st, opt)
	for ; !now.After(to); now = now.Add(every) {
		if err := det.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.RecordedSpikes(ctx, from.Add(-time.Hour), to, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rec {
		t.Logf("spike %s %s onset %s (%+v after from) %s→%s end %s ongoing=%t sev=%s", s.Role, s.Scope.Model, s.Onset.Format(time.TimeOnly), s.Onset.Sub(from),
			fmtV(s.Baseline), fmtV(s.PeakValue), s.End.Format(time.TimeOnly), s.Ongoing, s.Severity)
	}
	for _, in := range list {
		t.Logf("incident %d %q start %s created %s", in.ID, in.Title, in.Start.Format(time.TimeOnly), in.CreatedAt.Format(time.TimeOnly))
	}
	return list
}

func fmtV(v float64) string {
	return time.Duration(v * float64(time.Millisecond)).Round(time.Millisecond).String()
}

// fourPods are four pods in routing from start on (warm), the i-th until
// until[i] (zero: for good).
func fourPods(start time.Time, until ...time.Time) []routinePod {
	pods := make([]routinePod, 4)
	for i := range pods {
		pods[i] = routinePod{from: start.Add(-time.Hour), to: start.Add(1000 * time.Hour), share: 1}
		if i < len(until) && !until[i].IsZero() {
			pods[i].to = until[i]
		}
	}
	return pods
}

// coldMinute is a new pod's first minute: ×3 at its first request, back
// within 10 % after a minute (weights paged in, kernels compiled).
func coldMinute(age time.Duration) float64 { return 1 + 2*math.Exp(-age.Seconds()/20) }

func flat(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }

// rollingDeploy is a RollingUpdate (maxSurge 1, maxUnavailable 0) of four
// pods at at: each new pod takes traffic when ready, 90 s after the
// previous one, and its old pod leaves then. The new version is as fast as
// the old one (×regress, 1: no regression) once warm.
func rollingDeploy(at time.Time, every time.Duration, regress float64, cold func(time.Duration) float64) []routinePod {
	var until []time.Time
	var pods []routinePod
	for i := range 4 {
		ready := at.Add(time.Duration(i+1) * every)
		until = append(until, ready)
		pods = append(pods, routinePod{from: ready, to: at.Add(1000 * time.Hour), share: 1, slow: func(age time.Duration) float64 {
			f := regress
			if cold != nil {
				f *= cold(age)
			}
			return f
		}})
	}
	return append(fourPods(at, until...), pods...)
}

func deployEvent(at time.Time) correlate.Event {
	return correlate.Event{ID: "deploy-chat-v2", Kind: correlate.KindDeploy, Time: at,
		Scope: correlate.Scope{Model: "chat", Version: "v2"}, Source: "argocd", Summary: "rollout chat v1 -> v2"}
}

func routineStore(t *testing.T, f routineFleet, events ...correlate.Event) *store.Store {
	t.Helper()
	return routineStoreKeeping(t, f, nil, events...)
}

// routineStoreKeeping is routineStore storing only the curves keep lets
// through (nil: all), as a pull without some series would.
func routineStoreKeeping(t *testing.T, f routineFleet, keep func(correlate.Curve) bool, events ...correlate.Event) *store.Store {
	t.Helper()
	st := storetest.New(t)
	// WriteCurves makes the partitions of a curve's first and last days:
	// the days between need theirs too.
	for d := f.start; d.Before(f.end); d = d.Add(24 * time.Hour) {
		if err := st.EnsurePartitions(context.Background(), store.TablePoints, d); err != nil {
			t.Fatal(err)
		}
	}
	var cs []correlate.Curve
	for _, c := range f.curves() {
		if keep == nil || keep(c) {
			cs = append(cs, c)
		}
	}
	storetest.WriteCurves(t, st, cs)
	if len(events) > 0 {
		if _, _, err := st.InsertEvents(context.Background(), events); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func scaleUp(at time.Time, k int, cold func(time.Duration) float64) []routinePod {
	var pods []routinePod
	for i := range k {
		pods = append(pods, routinePod{from: at.Add(time.Duration(i*5) * time.Second), to: at.Add(1000 * time.Hour), share: 1, slow: cold})
	}
	return pods
}

// scaleUpEvents are what the pull derives from kube-state-metrics for
// scaleUp(at, k, …): the HPA's scale-up 70 s before the first new pod
// takes traffic, and each pod's start a minute before it is ready (its
// weights loading) — after another deployment's scale-up that no model's
// label names (a fleet-wide event, which must not hide the model's own).
func scaleUpEvents(at time.Time, k int) []correlate.Event {
	evs := []correlate.Event{{ID: "hpa-ingress", Kind: correlate.KindScaleUp, Time: at.Add(-4 * time.Minute),
		Source: "kube-state-metrics", Summary: "scale up ingress-gateway 2 -> 3"},
		{ID: "hpa-chat", Kind: correlate.KindScaleUp, Time: at.Add(-70 * time.Second),
			Scope: correlate.Scope{Model: "chat"}, Source: "kube-state-metrics", Summary: "scale up chat 4 -> 6"}}
	for i := range k {
		evs = append(evs, correlate.Event{ID: fmt.Sprintf("start-chat-new-%d", i), Kind: correlate.KindReplicaStart,
			Time: at.Add(time.Duration(i*5)*time.Second - time.Minute), Scope: correlate.Scope{Model: "chat", Replica: fmt.Sprintf("chat-new-%d", i)},
			Source: "kube-state-metrics", Summary: "replica started"})
	}
	return evs
}

// canarySteps is a progressive delivery (Argo Rollouts / Flagger steps) of
// a version ×regress as slow as the old one: the new version's weight goes
// through shares at every interval, from at.
func canarySteps(at time.Time, every time.Duration, regress float64, shares ...float64) []routinePod {
	var pods []routinePod
	for i, s := range shares {
		from, to := at.Add(time.Duration(i)*every), at.Add(time.Duration(i+1)*every)
		if i == len(shares)-1 {
			to = at.Add(1000 * time.Hour)
		}
		pods = append(pods,
			routinePod{from: from, to: to, share: 1 - s},
			routinePod{from: from, to: to, share: s, slow: func(time.Duration) float64 { return regress }})
	}
	return append([]routinePod{{from: at.Add(-1000 * time.Hour), to: at, share: 1}}, pods...)
}

// coldStart is a new pod whose readiness probe sends no warm-up request:
// its first requests take ×4 (CUDA graphs captured, weights paged in),
// ×1.7 after 20 s, within 10 % of warm after 70 s.
func coldStart(age time.Duration) float64 { return 1 + 3*math.Exp(-age.Seconds()/20) }

// Routine operations the detector handles: an HPA scale-down, a node
// drain whose two rescheduled pods are mildly cold (×3 at first), a 1 %
// canary whose pod is cold (×4), a four-minute scrape gap.
func TestRoutineOperationsHandled(t *testing.T) {
	t.Parallel()
	start, at := t0.Add(-10*time.Hour), t0
	mild := func(age time.Duration) float64 { return 1 + 2*math.Exp(-age.Seconds()/20) }
	for _, tc := range []struct {
		name string
		pods []routinePod
		ev   []correlate.Event
		gap  [2]time.Time
	}{
		{"hpa scale-down", fourPods(at, at, at.Add(30*time.Second)), nil, [2]time.Time{}},
		{"node drain", append(fourPods(at, at, at), scaleUp(at.Add(time.Minute), 2, mild)...), nil, [2]time.Time{}},
		{"1% canary", append(fourPods(at), routinePod{from: at, to: at.Add(1000 * time.Hour), share: 4 * 0.01 / 0.99, slow: coldStart}),
			[]correlate.Event{deployEvent(at)}, [2]time.Time{}},
		{"scrape gap", fourPods(at), nil, [2]time.Time{at, at.Add(4 * time.Minute)}},
		{"hpa scale-up", append(fourPods(at), scaleUp(at, 2, coldStart)...), scaleUpEvents(at, 2), [2]time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := routineFleet{seed: 1, start: start, end: at.Add(20 * time.Minute), qps: flat(40), medianMs: 200, sigma: 0.35, pods: tc.pods, gap: tc.gap}
			st := routineStore(t, f, tc.ev...)
			if got := routineRun(t, st, at.Add(-5*time.Minute), at.Add(15*time.Minute), routineStep); len(got) > 0 {
				t.Errorf("%s opened %d incident(s): %q", tc.name, len(got), got[0].Title)
			}
		})
	}
}

// A version ×1.8 as slow (every request), shipped by progressive delivery
// (10 %, 25 %, 50 %, 100 % of the traffic, one step every few minutes) to
// a model whose P99 SLO is 700 ms: its P99 goes 450 → 810 ms for good, over
// the SLO. A one-step switch to the same version pages (see the "step"
// case). At 8 min a step the detector opened an incident and then
// resolved it while the P99 still stood ×1.8 over the SLO: re-read over
// a longer stretch the rise had become "drift", its spike was settled as
// over, and closeQuiet resolved the incident. At 12 and 15 min a step no
// step reaches ×1.5 the trailing median of the one before, the climb is
// drift to the spike detector from the start, and no incident opened:
// the comparison with the level before the deploy finds it.
func TestProgressiveRolloutRegressionIsNotMissed(t *testing.T) {
	t.Parallel()
	at := t0
	for _, tc := range []struct {
		name  string
		every time.Duration
		seed  uint64
	}{{"step", 0, 1}, {"8 min a step", 8 * time.Minute, 1}, {"12 min a step", 12 * time.Minute, 1}, {"15 min a step", 15 * time.Minute, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := routineFleet{seed: tc.seed, start: at.Add(-10 * time.Hour), end: at.Add(130 * time.Minute), qps: flat(40), medianMs: 200, sigma: 0.35,
				pods: canarySteps(at, tc.every, 1.8, 0.1, 0.25, 0.5, 1)}
			if tc.every == 0 {
				f.pods = canarySteps(at, time.Minute, 1.8, 1)
			}
			st := routineStore(t, f, deployEvent(at))
			got := routineRunWith(t, st, at.Add(-2*time.Minute), at.Add(125*time.Minute), time.Minute, diagnose.DetectorOptions{SLO: slo700})
			switch {
			case len(got) == 0:
				t.Errorf("a ×1.8 regression over the SLO, rolled out %s, opened no incident in two hours", tc.name)
			case got[0].Status != store.IncidentOpen:
				t.Errorf("a ×1.8 regression over the SLO, rolled out %s: its incident was %s at %v while the P99 still stands ×1.8",
					tc.name, got[0].Status, got[0].ResolvedAt)
			}
		})
	}
}

// A deploy at the start of the morning climb: over the next hour traffic
// grows ×1.7 and, with it, P99 ×1.8 — the load, not the new version (the
// capacity rules judge such a rise). The comparison with the level before
// the deploy must not page for it — nor for a model whose traffic curve
// the pull does not have (no request counter in its preset, a recording
// rule missing), where the load check had nothing to read and the climb
// was taken for the deploy's regression.
func TestDeployOnTheMorningClimbDoesNotPage(t *testing.T) {
	t.Parallel()
	at := t0
	climb := func(ts time.Time) float64 { return min(1, max(0, ts.Sub(at).Hours())) }
	pods := fourPods(at)
	for i := range pods {
		from := pods[i].from
		pods[i].slow = func(age time.Duration) float64 { return 1 + 0.8*climb(from.Add(age)) }
	}
	f := routineFleet{seed: 3, start: at.Add(-10 * time.Hour), end: at.Add(95 * time.Minute), medianMs: 200, sigma: 0.35, pods: pods,
		qps: func(ts time.Time) float64 { return 40 * (1 + 0.7*climb(ts)) }}
	for _, tc := range []struct {
		name string
		keep func(correlate.Curve) bool
	}{
		{"traffic curve", nil},
		{"no traffic curve", func(c correlate.Curve) bool { return c.Role != correlate.RoleQPS }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := routineStoreKeeping(t, f, tc.keep, deployEvent(at))
			if got := routineRunWith(t, st, at.Add(-2*time.Minute), at.Add(90*time.Minute), time.Minute, diagnose.DetectorOptions{SLO: slo700}); len(got) > 0 {
				t.Errorf("a deploy on the morning climb (%s) opened %d incident(s): %q", tc.name, len(got), got[0].Title)
			}
		})
	}
}

// slo700 is a P99 SLO of 700 ms for every model.
func slo700(string) (float64, bool) { return 700, true }

// An on-call engineer resolves the incident of a regression that holds
// (thinking the fix is out, or clearing the board): the latency stays
// ×1.8. Its spike was attached to the resolved incident, and the detector
// never paged again while the P99 stood over the SLO for the rest of the
// run. Ten minutes after such a resolve, a spike still up opens a new
// incident; one that came down after the resolve opens nothing; and a
// team that resolves the second too (it accepts the new level) is not
// paged a third time.
func TestResolvedWhileStillUpPagesAgain(t *testing.T) {
	t.Parallel()
	at := t0
	for _, tc := range []struct {
		name      string
		recovered bool            // the fix lands at the first resolve
		resolves  []time.Duration // after the deploy, each resolving what is open
		open, all int             // incidents open at the end, and in all
	}{
		{"still up", false, []time.Duration{20 * time.Minute}, 1, 2},
		{"came down", true, []time.Duration{20 * time.Minute}, 0, 1},
		{"resolved twice", false, []time.Duration{20 * time.Minute, 35 * time.Minute}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resolveAt := at.Add(tc.resolves[0])
			pods := canarySteps(at, time.Minute, 1.8, 1)
			if tc.recovered {
				pods[len(pods)-1].to = resolveAt
				pods = append(pods, routinePod{from: resolveAt, to: at.Add(1000 * time.Hour), share: 1})
			}
			f := routineFleet{seed: 1, start: at.Add(-10 * time.Hour), end: at.Add(65 * time.Minute), qps: flat(40), medianMs: 200, sigma: 0.35, pods: pods}
			st := routineStore(t, f, deployEvent(at))
			ctx := context.Background()
			now := at.Add(-2 * time.Minute)
			det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, SLO: slo700, Now: func() time.Time { return now }})
			for ; !now.After(at.Add(60 * time.Minute)); now = now.Add(time.Minute) {
				if err := det.Once(ctx); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(tc.resolves, now.Sub(at)) {
					list, _, err := st.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen})
					if err != nil || len(list) != 1 {
						t.Fatalf("open incidents at the resolve %v after the deploy: %d (%v), want one", now.Sub(at), len(list), err)
					}
					if _, _, err := st.ResolveIncidentOnce(ctx, list[0].ID, now); err != nil {
						t.Fatal(err)
					}
				}
			}
			open, _, err := st.ListIncidents(ctx, store.IncidentFilter{Status: store.IncidentOpen})
			if err != nil {
				t.Fatal(err)
			}
			all, _, err := st.ListIncidents(ctx, store.IncidentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(open) != tc.open || len(all) != tc.all {
				t.Errorf("%s: %d incident(s) open at the end of %d in all, want %d of %d", tc.name, len(open), len(all), tc.open, tc.all)
			}
		})
	}
}

// A replica in CrashLoopBackOff at its five-minute back-off: every five
// minutes it restarts cold (×4 at first, as coldStart) and lifts the
// model's P99 ×2.4 for 90 s. Without the restart events each bump has
// 90 s of excess and the second one pages; with them every bump was
// excused as a warm-up, and an hour of crashes opened nothing.
func TestCrashLoopingReplicaPages(t *testing.T) {
	t.Parallel()
	at := t0
	const every = 5 * time.Minute
	pods := append(fourPods(at), routinePod{from: at, to: at.Add(1000 * time.Hour), share: 1,
		slow: func(age time.Duration) float64 { return coldStart(age % every) }})
	var evs []correlate.Event
	for ts, i := at.Add(-30*time.Second), 0; ts.Before(at.Add(65 * time.Minute)); ts, i = ts.Add(every), i+1 {
		evs = append(evs, correlate.Event{ID: fmt.Sprintf("restart-chat-4-%d", i), Kind: correlate.KindReplicaRestart, Time: ts,
			Scope: correlate.Scope{Model: "chat", Replica: "chat-4"}, Source: "kube-state-metrics", Summary: "container restarted (OOMKilled)"})
	}
	f := routineFleet{seed: 1, start: at.Add(-10 * time.Hour), end: at.Add(65 * time.Minute), qps: flat(40), medianMs: 200, sigma: 0.35, pods: pods}
	st := routineStore(t, f, evs...)
	if got := routineRun(t, st, at.Add(-2*time.Minute), at.Add(60*time.Minute), routineStep); len(got) == 0 {
		t.Error("a replica crash-looping every five minutes (P99 ×2.4 for 90 s each time) opened no incident in an hour")
	}
}
