package diagnose_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// An incident that stays open for days (an alert group that keeps
// firing, a manual incident without an end) is analysed from its start
// to now, every time new data comes: at 15 s that is 17,280 points per
// curve over three days, growing until memory runs out. Past a day
// the curves are read downsampled — latency keeps each bucket's maximum,
// so the spike keeps its height — and at most maxCurvePoints per curve.
func TestLongWindowsReadDownsampledCurves(t *testing.T) {
	st := storetest.New(t)
	now := time.Now().UTC().Truncate(time.Minute)
	from := now.Add(-72 * time.Hour)
	spikeAt := from.Add(40 * time.Hour)
	c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	for at := from.Add(-2 * time.Hour); at.Before(now); at = at.Add(15 * time.Second) {
		v := 100.0
		if at.Equal(spikeAt) {
			v = 900 // one point: downsampling must keep it
		}
		c.Points = append(c.Points, correlate.Point{T: at.UnixMilli(), V: v})
	}
	var days []time.Time
	for d := from.Add(-3 * time.Hour); d.Before(now.Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
		days = append(days, d)
	}
	if err := st.EnsurePartitions(context.Background(), store.TablePoints, days...); err != nil {
		t.Fatal(err)
	}
	storetest.WriteCurves(t, st, []correlate.Curve{c})
	in, err := diagnose.LoadInput(context.Background(), st, correlate.Window{From: from, To: now}, correlate.Scope{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Curves) != 1 {
		t.Fatalf("%d curves", len(in.Curves))
	}
	peak := 0.0
	for _, p := range in.Curves[0].Points {
		peak = max(peak, p.V)
	}
	if n := len(in.Curves[0].Points); n > 6240 || peak != 900 || in.Step < time.Minute {
		t.Fatalf("%d points at step %s, peak %v; want at most 6,240, the spike kept", n, in.Step, peak)
	}
	// A short window is read at full resolution.
	in, err = diagnose.LoadInput(context.Background(), st, correlate.Window{From: spikeAt.Add(-time.Hour), To: spikeAt.Add(time.Hour)}, correlate.Scope{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Step != 15*time.Second {
		t.Fatalf("a two-hour window read at %s", in.Step)
	}
}
