package correlate

import (
	"fmt"
	"math"
	"strings"
)

// checklist answers the article's four steps from the analysis: scope
// first, then the timeline, then the samples, then the action.
func checklist(a Analysis, f *facts) []ChecklistStep {
	steps := []ChecklistStep{{Step: "scope", Answer: a.Scope.Summary}}

	var tl []string
	if a.Onset != nil {
		tl = append(tl, "Latency rose at "+a.Onset.UTC().Format("15:04:05")+" UTC.")
	} else {
		tl = append(tl, "No latency spike was detected in the window.")
	}
	n := 0
	for _, e := range a.Events {
		if e.TimeWeight*e.ScopeMatch < 0.2 || n == 3 {
			continue
		}
		n++
		what := string(e.Kind)
		if e.Summary != "" {
			what += " (" + e.Summary + ")"
		}
		tl = append(tl, fmt.Sprintf("%s %s.", capitalize(what), ago(e)))
	}
	if n == 0 && a.Onset != nil {
		tl = append(tl, "No change event lines up with the onset.")
	}
	for _, d := range a.Deviations {
		if d.Level == LevelModel || d.Level == LevelNode {
			if d.Role == RoleLatencyP50 || d.Role == RoleLatencyP95 || d.Role == RoleLatencyP99 {
				continue
			}
			tl = append(tl, fmt.Sprintf("%s moved the most among resource curves (%s).", describeCurve(d), iqrs(d.Deviation)))
			break
		}
	}
	steps = append(steps, ChecklistStep{Step: "timeline", Answer: strings.Join(tl, " ")})

	var sm []string
	if a.Samples.Total == 0 {
		sm = append(sm, "No request samples cover this window; send them to POST /api/v1/samples to see which requests were slow.")
	} else {
		if top := dominantStages(a.Stages); len(top) > 0 && top[0].Share > 0 {
			sm = append(sm, fmt.Sprintf("The %s stage explains %.0f%% of the tail's growth (+%s).", top[0].Stage, 100*top[0].Share, fmtMs(top[0].DeltaMs)))
		}
		if len(a.Concentration) > 0 {
			c := a.Concentration[0]
			sm = append(sm, fmt.Sprintf("Slow requests concentrate on %s (%.0f%% of slow vs %.0f%% of others).", dimString(c), c.SelectionPct, c.BaselinePct))
		} else {
			sm = append(sm, "Slow requests are not concentrated on any single dimension.")
		}
	}
	steps = append(steps, ChecklistStep{Step: "samples", Answer: strings.Join(sm, " ")})

	act := "No action suggested until a cause is supported."
	if len(a.Causes) > 0 && a.Causes[0].Category != CatUnexplained && len(a.Causes[0].Actions) > 0 {
		act = fmt.Sprintf("Most likely %s (%.2f): %s.", a.Causes[0].Category, a.Causes[0].Score, a.Causes[0].Actions[0])
	}
	steps = append(steps, ChecklistStep{Step: "action", Answer: act})
	return steps
}

func describeCurve(d CurveDeviation) string {
	s := string(d.Role)
	if d.Stage != "" {
		s += " (" + d.Stage + ")"
	}
	if sc := d.Scope.String(); sc != "" {
		s += " of " + sc
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// iqrs formats a robust deviation; past 100 IQRs the exact figure says
// nothing more than "far off its baseline".
func iqrs(d float64) string {
	if math.Abs(d) > 100 {
		return "more than 100 IQRs"
	}
	return fmt.Sprintf("%.1f IQRs", d)
}
