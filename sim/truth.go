package sim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Truth is what really happened, for judging an analysis: the category,
// its target, when its effect began (Onset: the first request it touched,
// which for a rollout or a scale-up is when the first new replica took
// traffic, not when the change was pushed) and ended, and the P99 of the
// affected requests before and during it, measured from the simulated
// requests themselves.
type Truth struct {
	Category  string           `json:"category"`
	Target    correlate.Target `json:"target"`
	Onset     *time.Time       `json:"onset"`
	Recovered *time.Time       `json:"recovered"`
	Notes     []string         `json:"notes"`

	// ChangeTime is when the cause was set off (the deploy, the push).
	ChangeTime *time.Time `json:"change_time,omitempty"`
	// CauseEventID is the pushed event that announced the cause, if any.
	CauseEventID string `json:"cause_event_id,omitempty"`
	// CauseEventHidden is true when that event was withheld.
	CauseEventHidden bool    `json:"cause_event_hidden,omitempty"`
	Strength         float64 `json:"strength"`
	// MeasuredOn names the requests the P99s are computed over.
	MeasuredOn  string  `json:"measured_on"`
	P99BeforeMs float64 `json:"p99_before_ms"`
	P99DuringMs float64 `json:"p99_during_ms"`
}

// measureScope is where and when the truth's P99s are taken: the entry
// times of the "before" and "during" windows (seconds from the start). The
// requests counted are those of models or pods marked measured.
type measureScope struct {
	from0, to0, from1, to1 float64
	what                   string
}

// Truth returns the injected cause. It runs the simulation if it has not
// run yet, to measure the P99s.
func (f *Fleet) Truth() Truth {
	f.run()
	t := f.truth
	t.Notes = append([]string(nil), t.Notes...)
	t.MeasuredOn = f.measured.what
	var all0, all1 []float64
	type shift struct {
		name string
		b, d float64
	}
	var per []shift
	for i, m := range f.models {
		if len(f.before[i]) == 0 {
			continue
		}
		all0 = append(all0, f.before[i]...)
		all1 = append(all1, f.during[i]...)
		per = append(per, shift{m.spec.name, quantile(f.before[i], 0.99) * 1000, quantile(f.during[i], 0.99) * 1000})
	}
	t.P99BeforeMs = round3(quantile(all0, 0.99) * 1000)
	t.P99DuringMs = round3(quantile(all1, 0.99) * 1000)
	if len(per) > 1 {
		// Pooled over several models the P99 is the slowest model's; the
		// most shifted model says more, and each model gets a note.
		best := per[0]
		for _, p := range per {
			t.Notes = append(t.Notes, fmt.Sprintf("p99 %s: %.0f ms -> %.0f ms (x%.2f)", p.name, p.b, p.d, p.d/p.b))
			if p.d/p.b > best.d/best.b {
				best = p
			}
		}
		t.MeasuredOn = fmt.Sprintf("model %s, the most shifted of %s", best.name, f.measured.what)
		t.P99BeforeMs, t.P99DuringMs = round3(best.b), round3(best.d)
	}
	if t.P99BeforeMs > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("p99 %s: %.0f ms before -> %.0f ms during (x%.2f)",
			t.MeasuredOn, t.P99BeforeMs, t.P99DuringMs, t.P99DuringMs/t.P99BeforeMs))
	}
	return t
}

// quantile is the q-quantile of xs (nearest rank), 0 when empty. It sorts
// a copy.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// TargetMatches judges an analysis' target against the truth's the way the
// acceptance check does: a release must name the model and version; a
// fleet-wide truth accepts a fleet-wide answer; a replica or node fault the
// replica (or, when only the node is known, the node); cold starts at least
// half the young replicas; a slow dependency one of the callers.
func TargetMatches(category string, want, got correlate.Target) bool {
	switch category {
	case "release":
		return got.Model == want.Model && got.Version == want.Version
	case "capacity", "batching", "routing":
		if want.Model == "" && len(want.Models) == 0 {
			return got.Model == "" || len(got.Models) >= 2
		}
		return got.Model == want.Model || slices.Contains(got.Models, want.Model)
	case "local_replica":
		if want.Replica != "" && (got.Replica == want.Replica || slices.Contains(got.Replicas, want.Replica)) {
			return true
		}
		return want.Node != "" && got.Node == want.Node && want.Replica == ""
	case "cold_start":
		if got.Model != want.Model {
			return false
		}
		n := 0
		for _, r := range want.Replicas {
			if slices.Contains(got.Replicas, r) {
				n++
			}
		}
		return len(want.Replicas) == 0 || len(got.Replicas) == 0 || n >= max(1, len(want.Replicas)/2)
	case "downstream":
		g := got.Models
		if len(g) == 0 && got.Model != "" {
			g = []string{got.Model}
		}
		if len(g) == 0 {
			return true
		}
		for _, m := range g {
			if slices.Contains(want.Models, m) {
				return true
			}
		}
		return false
	}
	return true
}
