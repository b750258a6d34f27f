package diagnose_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store/storetest"
)

// BenchmarkDetectorPassAfterChanges times one detector pass over 50
// models, each changed in the last two hours by events changes (a CD
// tool that posts one event per canary step posts four): the change
// rule's reads grew with the events, two curve reads of 2.5 h each.
func BenchmarkDetectorPassAfterChanges(b *testing.B) {
	for _, events := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			ctx := context.Background()
			st := storetest.New(b)
			now := t0.Add(3 * time.Hour)
			rng := rand.New(rand.NewPCG(5, 5))
			var curves []correlate.Curve
			var evs []correlate.Event
			for m := range 50 {
				sc := correlate.Scope{Model: fmt.Sprintf("m%02d", m)}
				for _, r := range []correlate.Role{correlate.RoleLatencyP50, correlate.RoleLatencyP95, correlate.RoleLatencyP99, correlate.RoleQPS} {
					c := correlate.Curve{Role: r, Level: correlate.LevelModel, Scope: sc}
					for ts := t0; ts.Before(now); ts = ts.Add(15 * time.Second) {
						c.Points = append(c.Points, correlate.Point{T: ts.UnixMilli(), V: 200 * math.Exp(0.05*rng.NormFloat64())})
					}
					curves = append(curves, c)
				}
				for i := range events {
					evs = append(evs, correlate.Event{ID: fmt.Sprintf("deploy-%d-%d", m, i), Kind: correlate.KindDeploy,
						Time: now.Add(-100*time.Minute + time.Duration(i)*12*time.Minute), Scope: sc, Source: "argo-rollouts"})
				}
			}
			storetest.WriteCurves(b, st, curves)
			if len(evs) > 0 {
				if _, _, err := st.InsertEvents(ctx, evs); err != nil {
					b.Fatal(err)
				}
			}
			det := diagnose.NewDetector(st, diagnose.DetectorOptions{OpenIncidents: true, Now: func() time.Time { return now }})
			if err := det.Once(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := det.Once(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
