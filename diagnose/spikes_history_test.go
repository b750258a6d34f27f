package diagnose_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// Curves stored at 1 min are judged with their days of history, not the
// 50 hours that 15 s curves get: the busy morning of the eighth day, after
// two quiet days (a weekend: latency follows traffic), is an ordinary
// morning by the same time on the earlier days, but a spike (×2.1) by the
// weekend alone.
func TestSpikesCoarseCurvesReadDaysOfHistory(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	rng := rand.New(rand.NewPCG(5, 5))
	step := time.Minute
	start := t0.Add(-8 * 24 * time.Hour).Truncate(24 * time.Hour)
	c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	for ts := start; ts.Before(start.Add(8*24*time.Hour + 18*time.Hour)); ts = ts.Add(step) {
		day := int(ts.Sub(start) / (24 * time.Hour))
		h := float64(ts.Sub(start)%(24*time.Hour)) / float64(time.Hour)
		v := 150 + 150*math.Min(1, math.Max(0, (h-8)*3)*math.Max(0, math.Min(1, (18-h)*3))) // busy 08:20–17:40, 20 min ramps
		if day == 5 || day == 6 {
			v = 150 // the weekend
		}
		c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v * math.Exp(0.03*rng.NormFloat64())})
	}
	var days []time.Time
	for d := start; d.Before(start.Add(9 * 24 * time.Hour)); d = d.Add(24 * time.Hour) {
		days = append(days, d)
	}
	if err := st.EnsurePartitions(context.Background(), store.TablePoints, days...); err != nil {
		t.Fatal(err)
	}
	storetest.WriteCurves(t, st, []correlate.Curve{c})
	monday := start.Add(7 * 24 * time.Hour)
	spikes, err := diagnose.Spikes(context.Background(), st, diagnose.SpikeQuery{From: monday.Add(5 * time.Hour), To: monday.Add(18 * time.Hour)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spikes {
		t.Errorf("Monday's ordinary morning raised a spike: %s at %s ×%.1f (%s baseline)", s.Role, s.Onset.Format(time.DateTime), s.PeakValue/s.Baseline, s.BaselineKind)
	}
}

// A model measured by its mean latency alone (Triton without its
// summary) has its spikes found on the mean; where a P99 exists, the
// mean adds none.
func TestSpikesOnTheMeanWhereNoQuantile(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	rng := rand.New(rand.NewPCG(7, 7))
	step := 15 * time.Second
	start := t0.Add(-4 * time.Hour)
	onset := t0.Add(-30 * time.Minute)
	curve := func(role correlate.Role, model string, base float64) correlate.Curve {
		c := correlate.Curve{Role: role, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model}}
		for ts := start; ts.Before(t0); ts = ts.Add(step) {
			v := base
			if !ts.Before(onset) && ts.Before(onset.Add(15*time.Minute)) {
				v *= 4
			}
			c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: v * math.Exp(0.03*rng.NormFloat64())})
		}
		return c
	}
	if err := st.EnsurePartitions(context.Background(), store.TablePoints, start, t0); err != nil {
		t.Fatal(err)
	}
	storetest.WriteCurves(t, st, []correlate.Curve{
		curve(correlate.RoleLatencyMean, "resnet", 20),
		curve(correlate.RoleLatencyMean, "chat", 50), curve(correlate.RoleLatencyP99, "chat", 200),
	})
	spikes, err := diagnose.Spikes(context.Background(), st, diagnose.SpikeQuery{From: onset.Add(-time.Hour), To: t0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range spikes {
		got[string(s.Role)+" "+s.Scope.Model] = true
	}
	if !got["latency_mean resnet"] || !got["latency_p99 chat"] || got["latency_mean chat"] {
		t.Errorf("spikes on %v; want resnet's mean and chat's P99 (not chat's mean)", got)
	}
}
