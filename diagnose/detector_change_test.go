package diagnose_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/store"
)

// The 8-minute case of TestProgressiveRolloutRegressionIsNotMissed: the
// spike detector opens the incident on the first steps, later re-reads
// the climb as drift, and stillHeld keeps its spike ongoing. The change
// rule, seeing no spike of the curve this pass, recorded the same
// episode again under another start: two P99 spikes of one curve on one
// incident, both ongoing.
func TestChangeRegressionDoesNotDuplicateAHeldSpike(t *testing.T) {
	t.Parallel()
	at := t0
	f := routineFleet{seed: 1, start: at.Add(-10 * time.Hour), end: at.Add(130 * time.Minute), qps: flat(40), medianMs: 200, sigma: 0.35,
		pods: canarySteps(at, 8*time.Minute, 1.8, 0.1, 0.25, 0.5, 1)}
	st := routineStore(t, f, deployEvent(at))
	got := routineRunWith(t, st, at.Add(-2*time.Minute), at.Add(125*time.Minute), time.Minute, diagnose.DetectorOptions{SLO: slo700})
	if len(got) != 1 || got[0].Status != store.IncidentOpen {
		t.Fatalf("want one open incident for the held ×1.8 regression, got %d", len(got))
	}
	rec, err := st.RecordedSpikes(context.Background(), at.Add(-time.Hour), at.Add(3*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range rec {
		for _, b := range rec[i+1:] {
			if a.SeriesKey == b.SeriesKey && !a.End.Before(b.Start) && !b.End.Before(a.Start) {
				t.Errorf("two recorded spikes of %s overlap: start %s (incident %v) and start %s (incident %v)", a.SeriesKey,
					a.Start.Sub(at), deref(a.IncidentID), b.Start.Sub(at), deref(b.IncidentID))
			}
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// dailyRise is a latency pattern of the time of day, with the traffic
// flat (larger requests in business hours: longer prompts, bigger
// batches of a tenant): from at's time of day the model's latency climbs
// ×1.8 over an hour, holds four hours, and comes back down over an hour,
// every day.
func dailyRise(at time.Time) func(time.Time) float64 {
	return func(ts time.Time) float64 {
		d := ts.Sub(at) % (24 * time.Hour)
		if d < 0 {
			d += 24 * time.Hour
		}
		switch h := d.Hours(); {
		case h < 1:
			return 1 + 0.8*h
		case h < 5:
			return 1.8
		case h < 6:
			return 1.8 - 0.8*(h-5)
		}
		return 1
	}
}

// A deploy (of a version as fast as the old one) at the start of a daily
// latency rise that the traffic does not show: the rise came yesterday
// at the same time, without a deploy, and the spike detector pages
// nothing for it either day. Compared with the 30 minutes before the
// deploy, the rise was taken for the deploy's regression.
func TestDeployDuringADailyRiseDoesNotPage(t *testing.T) {
	t.Parallel()
	at := t0
	rise := dailyRise(at)
	pods := fourPods(at.Add(-27 * time.Hour)) // in routing since yesterday
	for i := range pods {
		from := pods[i].from
		pods[i].slow = func(age time.Duration) float64 { return rise(from.Add(age)) }
	}
	f := routineFleet{seed: 3, start: at.Add(-28 * time.Hour), end: at.Add(95 * time.Minute), medianMs: 200, sigma: 0.35, pods: pods, qps: flat(20)}
	st := routineStore(t, f, deployEvent(at))
	if got := routineRunWith(t, st, at.Add(-2*time.Minute), at.Add(90*time.Minute), time.Minute, diagnose.DetectorOptions{SLO: slo700}); len(got) > 0 {
		t.Errorf("a deploy at the start of the daily latency rise opened %d incident(s): %q", len(got), got[0].Title)
	}
}

// A regression the change comparison found, whose data then stops (the
// model's exporter gone, the pull cut off): the detector's other spikes
// end where their data ends ("ongoing" at a last point long past says
// nothing), but this one stayed ongoing for as long as its change was
// watched, two hours.
func TestChangeRegressionEndsWhereItsDataStops(t *testing.T) {
	t.Parallel()
	at := t0
	stop := at.Add(50 * time.Minute)
	f := routineFleet{seed: 1, start: at.Add(-10 * time.Hour), end: at.Add(85 * time.Minute), qps: flat(40), medianMs: 200, sigma: 0.35,
		pods: canarySteps(at, 12*time.Minute, 1.8, 0.1, 0.25, 0.5, 1), gap: [2]time.Time{stop, at.Add(1000 * time.Hour)}}
	st := routineStore(t, f, deployEvent(at))
	routineRunWith(t, st, at.Add(-2*time.Minute), at.Add(80*time.Minute), time.Minute, diagnose.DetectorOptions{SLO: slo700})
	rec, err := st.RecordedSpikes(context.Background(), at.Add(-time.Hour), at.Add(2*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) == 0 {
		t.Fatal("the regression was not recorded")
	}
	for _, s := range rec {
		if s.Ongoing {
			t.Errorf("%s spike (onset %v after the deploy) still ongoing 30 min after its data stopped", s.Role, s.Onset.Sub(at))
		}
	}
}
