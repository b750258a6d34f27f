package correlate

import (
	"strings"
	"testing"
	"time"
)

// A deploy ten minutes before a spike: the new version either served
// those minutes at its predecessor's latency and slowed down with
// everything at the onset (the deploy is a red herring), or was slow
// from the start. Once the rollout is complete only the new version's
// own minutes before the onset tell the two apart.
func TestReleaseJudgesTheNewVersionsMinutesBeforeTheOnset(t *testing.T) {
	for _, tc := range []struct {
		name         string
		v2Before     float64 // v2's latency between its deploy and the onset
		wantFine     bool
		wantSummary  string
		avoidSummary string
	}{
		{"served fine, then slowed with the spike", 100, true, "slowed down with the spike, not with its deploy", "slower than the version it replaces"},
		{"slow from its deploy", 300, false, "slower than the version it replaces", "not with its deploy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture()
			deploy := x.onset.Add(-10 * time.Minute)
			x.p99("m", 100, 400)
			x.curve(RoleQPS, LevelModel, Scope{Model: "m"}, 20, 20)
			x.sampleRun(20, Scope{Model: "m", Version: "v1"}, 100, 400, func(s *Sample, during bool) {
				if !s.Time.Before(deploy) {
					s.Version = "v2"
					if !during {
						s.TotalMs *= tc.v2Before / 100
					}
				}
			})
			x.events = []Event{{ID: "cd-1", Kind: KindDeploy, Time: deploy, Scope: Scope{Model: "m", Version: "v2"}}}
			a := Analyze(Input{
				Window: Window{From: x.onset.Add(-5 * time.Minute), To: fxStart.Add(fxMinutes * time.Minute)},
				Curves: x.curves, Events: x.events, Samples: x.samples, Step: time.Minute,
			})
			var rel *Cause
			for i := range a.Causes {
				if a.Causes[i].Category == CatRelease {
					rel = &a.Causes[i]
				}
			}
			if rel == nil {
				t.Fatalf("no release cause; ranking: %+v", a.Causes)
			}
			fine := false
			for _, e := range rel.CounterEvidence {
				if e.Name == "new_version_fine_before_onset" {
					fine = true
					if !strings.Contains(e.Summary, "v2 served") || !strings.Contains(e.Summary, "like v1's") {
						t.Errorf("counter-evidence %q", e.Summary)
					}
				}
			}
			if fine != tc.wantFine {
				t.Errorf("new_version_fine_before_onset listed: %v, want %v (counter: %+v)", fine, tc.wantFine, rel.CounterEvidence)
			}
			if !strings.Contains(rel.Summary, tc.wantSummary) || strings.Contains(rel.Summary, tc.avoidSummary) {
				t.Errorf("summary %q, want it to say %q and not %q", rel.Summary, tc.wantSummary, tc.avoidSummary)
			}
			if tc.wantFine && rel.Score > 0.3 {
				t.Errorf("release scored %.2f with its new version fine before the onset", rel.Score)
			}
		})
	}
}
