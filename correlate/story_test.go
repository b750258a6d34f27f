package correlate_test

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/sim"
)

// jargon must not reach text an engineer reads.
var jargon = regexp.MustCompile(`(?i)\bIQRs?\b|robust z|risk ratio|−-`)

// TestOneStory: on every simulated incident the headline, the impact
// blocks, the scope, the sample counts and the checklist tell one story —
// the same model, the same numbers, the same facts of the top cause.
func TestOneStory(t *testing.T) {
	t.Parallel()
	for _, sc := range sim.Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			a := correlate.Analyze(simulated(t, sc).input)
			checkStory(t, a)
		})
	}
}

func checkStory(t *testing.T, a correlate.Analysis) {
	t.Helper()
	if len(a.Impact) != len(a.Scope.Models) {
		t.Fatalf("%d impact blocks for %d scope models", len(a.Impact), len(a.Scope.Models))
	}
	if len(a.Impact) == 0 {
		if a.Headline.Model != "" {
			t.Errorf("headline %+v without affected models", a.Headline)
		}
		return
	}
	im := a.Impact[0]
	// The headline model is the one hit hardest, everywhere.
	for _, o := range a.Impact[1:] {
		if o.Rise > im.Rise {
			t.Errorf("headline %s (×%.2f) but %s rose ×%.2f", im.Model, im.Rise, o.Model, o.Rise)
		}
	}
	if a.Headline.Model != im.Model || a.Scope.Models[0] != im.Model || !strings.Contains(a.Headline.Title, im.Model) {
		t.Errorf("headline %+v, impact %s, scope %v: not the same model", a.Headline, im.Model, a.Scope.Models)
	}
	if a.P99BeforeMs != im.BaselineP99Ms || a.P99DuringMs != im.DuringP99Ms {
		t.Errorf("P99 before/during %.0f/%.0f are not the headline model's %.0f/%.0f", a.P99BeforeMs, a.P99DuringMs, im.BaselineP99Ms, im.DuringP99Ms)
	}
	if im.PeakAt == nil || im.PeakP99Ms < im.DuringP99Ms*0.999 || im.NowAt == nil {
		t.Errorf("impact without a peak or now: %+v", im)
	}
	if (im.Status == "recovered") != (im.RecoveredAt != nil) || (im.Status != "recovered" && im.Status != "ongoing") {
		t.Errorf("status %q, recovered at %v", im.Status, im.RecoveredAt)
	}
	// One count of slow requests: per model it adds up, and the
	// concentration's shares are shares of it.
	var sum float64
	for _, x := range a.Impact {
		sum += x.SlowRequests
	}
	if math.Abs(sum-a.Samples.SlowRequests) > float64(len(a.Impact)) {
		t.Errorf("impact blocks count %.0f slow requests, the sample summary %.0f", sum, a.Samples.SlowRequests)
	}
	for _, c := range a.Concentration {
		if d := 100*c.Count/a.Samples.SlowRequests - c.SelectionPct; math.Abs(d) > 0.5 {
			t.Errorf("row %s: %.0f slow requests are %.1f%% of %.0f, not %.1f%%", c.Label, c.Count, 100*c.Count/a.Samples.SlowRequests, a.Samples.SlowRequests, c.SelectionPct)
		}
	}
	checkChecklist(t, a)
	checkWords(t, a)
}

// checkChecklist: the steps quote the top cause's facts, and the timeline
// names no curve from outside the incident's scope.
func checkChecklist(t *testing.T, a correlate.Analysis) {
	t.Helper()
	steps := map[string]correlate.ChecklistStep{}
	for _, s := range a.Checklist {
		steps[s.Step] = s
	}
	top := a.Causes[0]
	samples := steps["samples"]
	for _, e := range top.Evidence {
		if len(e.Row) > 0 && e.Name != "spread_over_pool" {
			if !maps(samples.Row, e.Row) {
				t.Errorf("samples step quotes row %v, the top cause rests on %v (%s)", samples.Row, e.Row, e.Name)
			}
			break
		}
	}
	if len(samples.Row) > 0 {
		found := false
		for _, c := range a.Concentration {
			found = found || maps(c.Dims, samples.Row)
		}
		if !found {
			t.Errorf("samples step quotes a row that is not in the concentration: %v", samples.Row)
		}
	}
	tl := steps["timeline"]
	if tl.Event != "" {
		cited := false
		for _, e := range top.Evidence {
			cited = cited || e.Event == tl.Event
		}
		if !cited {
			t.Errorf("timeline quotes event %s that the top cause does not rest on", tl.Event)
		}
	}
	if tl.Curve != "" {
		var d *correlate.CurveDeviation
		for i := range a.Deviations {
			if a.Deviations[i].Key == tl.Curve {
				d = &a.Deviations[i]
			}
		}
		cited := false
		for _, e := range top.Evidence {
			cited = cited || e.Curve == tl.Curve
		}
		if !cited && d != nil && d.Scope.Model == "" && !slices.Contains(a.Scope.Nodes, d.Scope.Node) && d.Scope.Node != top.Target.Node {
			t.Errorf("timeline names %s, outside the incident's scope (nodes %v)", tl.Curve, a.Scope.Nodes)
		}
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkWords: no statistics jargon in any text a person reads.
func checkWords(t *testing.T, a correlate.Analysis) {
	t.Helper()
	texts := []string{a.Headline.Title, a.Headline.Summary, a.Reconciliation, a.Scope.Summary, a.Coverage.Summary}
	for _, c := range a.Causes {
		texts = append(texts, c.Summary)
		texts = append(texts, c.Actions...)
		for _, e := range append(c.Evidence, c.CounterEvidence...) {
			texts = append(texts, e.Summary)
		}
	}
	for _, s := range a.Checklist {
		texts = append(texts, s.Answer)
	}
	for _, n := range a.NotAssessable {
		texts = append(texts, n.Reason)
	}
	for _, s := range texts {
		if jargon.MatchString(s) {
			t.Errorf("jargon in %q", s)
		}
	}
}

// TestAnalysisJSONDocumented: the story's fields are in the JSON under the
// names the UI and the API read.
func TestAnalysisJSONDocumented(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(correlate.Analyze(simulated(t, sim.ColdStart).input))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"headline", "impact", "causes", "not_assessable", "coverage", "scope", "checklist", "samples", "concentration"} {
		if _, ok := m[k]; !ok {
			t.Errorf("analysis JSON lacks %q", k)
		}
	}
}

func TestOpenedBy(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{"manual": "opened manually", "alertmanager": "opened by Alertmanager", "detector": "opened by the detector"} {
		if got := correlate.OpenedBy(src); got != want {
			t.Errorf("OpenedBy(%q) = %q, want %q", src, got, want)
		}
	}
}
