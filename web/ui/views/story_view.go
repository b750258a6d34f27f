package views

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// The incident's story on the page: the headline, the impact per model,
// the reconciliation and the checklist's key facts all come from the
// analysis (correlate's Headline, Impact, Reconciliation, Checklist and
// Samples.SlowRequests); nothing here recomputes them, so the header, the
// checklist, the export and the API summary cannot disagree.

// ImpactView is one affected model's row of the impact block.
type ImpactView struct {
	Model    string
	Quantile string // the quantile the figures are of: "P99", or "P95" where no P99 is measured
	Baseline string // "429 ms"; "–" when not measured
	Peak     string // "1,307 ms"
	PeakAt   string // "07:31 UTC"
	Now      string
	NowAt    string // when Now was measured: the analysed data's end
	Rise     string // "×3.0"; "at least ×25" when the P99 during sat at its histogram's top bucket
	// Ceiling says why a figure reads "≥" (the quantile reached its
	// histogram's top bucket); "" when none does.
	Ceiling    string
	Status     string // "ongoing" or "recovered"
	StatusText string // "recovered at 08:18 UTC" / "ongoing at the end of the data"
	Slow       string // "12,345" slow requests of this model ("" without samples); "not known" without a baseline
	SlowRaw    string // the same, unformatted, for tests
	SlowNote   string // why Slow is "not known"
	Tenants    []Link // tenants hit, as filter chips: "t-contoso 68%"
	SLO        string // "SLO 500 ms: 14 min over, 3.2% of the 30-day budget"
}

// SlowCount is the incident's one count of slow requests.
type SlowCount struct {
	Text string // "37,978"; "not known" when "slow" is the spike's own tail
	Raw  string // "37978", a data attribute tests compare
	// Note says what the count rests on when that is not a baseline:
	// "no baseline before the onset: …".
	Note  string
	Basis string // the analysis' slow_basis when Note is set
}

// The words for a model whose "slow" is its spike's own slowest tenth:
// with no baseline, a tenth of its requests are slow by construction.
const (
	slowUnknown   = "not known"
	slowNoBaseAll = "no baseline before the onset: the slowest tenth of the sampled requests during the spike stands in for the slow ones"
	slowNoBaseOne = "no baseline before the onset: its slowest tenth stands in"
)

// slowTotal is the header's and the export's count of slow requests,
// saying what it rests on when some model has no baseline; name escapes
// a model's name for where the note goes.
func slowTotal(a *correlate.Analysis, name func(string) string) SlowCount {
	c := slowCount(a.Samples.SlowRequests, slowEstimated(a))
	c.Basis = a.Samples.SlowBasis
	switch a.Samples.SlowBasis {
	case correlate.SlowBasisSpikeTail:
		c.Text, c.Note = slowUnknown, slowNoBaseAll
	case correlate.SlowBasisMixed:
		var tail []string
		for _, im := range a.Impact {
			if im.SlowBasis == correlate.SlowBasisSpikeTail {
				tail = append(tail, name(im.Model))
			}
		}
		switch len(tail) {
		case 0: // past the impact list
			c.Note = "of which some models' parts are their own slowest tenth during the spike, with no baseline before the onset"
		case 1:
			c.Note = "of which " + tail[0] + "'s part is its own slowest tenth during the spike, with no baseline before the onset"
		default:
			c.Note = "of which the parts of " + strings.Join(tail, ", ") + " are their own slowest tenth during the spike, with no baseline before the onset"
		}
	}
	return c
}

// slowOfModel is an impact's count of slow requests.
func slowOfModel(a *correlate.Analysis, im correlate.Impact) SlowCount {
	c := slowCount(im.SlowRequests, slowEstimated(a))
	if im.SlowBasis == correlate.SlowBasisSpikeTail {
		c.Text, c.Note = slowUnknown, slowNoBaseOne
	}
	return c
}

// estimated: the count is the samples re-weighted by their sample_rate,
// not requests counted one by one; it reads "≈".
func slowCount(v float64, estimated bool) SlowCount {
	r := math.Round(v)
	c := SlowCount{Text: thousands(r), Raw: FmtInt(r)}
	if estimated {
		c.Text = "≈" + c.Text
	}
	return c
}

// slowEstimated says whether an analysis' slow-request counts are
// re-weighted samples (a sample_rate over 1), not a count of requests.
func slowEstimated(a *correlate.Analysis) bool {
	return math.Abs(a.Samples.SlowRequests-float64(a.Samples.Slow)) >= 0.5
}

// onsetWhen says when latency rose: the onset, or, when the latency
// curve has a hole ending at it, the hole, since the rise came somewhere
// in it and the onset is only when it was first seen.
func onsetWhen(a *correlate.Analysis) string {
	if a.OnsetGapFrom == nil {
		return FmtTime(*a.Onset, time.Time{})
	}
	from := strings.TrimSuffix(FmtTime(*a.OnsetGapFrom, time.Time{}), " UTC")
	return "between " + from + " and " + FmtTime(*a.Onset, *a.OnsetGapFrom) + " (no latency data in between)"
}

// peakOf is an impact's peak ("1.31 s"; its median during when higher),
// "≥ 10 s" when that is the histogram's top bucket its quantile curve
// was pinned at: the true peak was higher.
func peakOf(im correlate.Impact) string {
	v := math.Max(im.PeakP99Ms, im.DuringP99Ms)
	if correlate.AtCeiling(v, im.CeilingMs) {
		return "≥ " + FmtMs(v)
	}
	return FmtMs(v)
}

// nowOf is an impact's latest figure, "≥" when it is still at the top
// bucket; "–" when not measured (0).
func nowOf(im correlate.Impact) string {
	if correlate.AtCeiling(im.NowP99Ms, im.CeilingMs) {
		return "≥ " + FmtMs(im.NowP99Ms)
	}
	return msOrDash(im.NowP99Ms)
}

// ceilingOf says why an impact's peak reads "≥", or "".
func ceilingOf(im correlate.Impact) string {
	if !correlate.AtCeiling(math.Max(im.PeakP99Ms, im.DuringP99Ms), im.CeilingMs) {
		return ""
	}
	return correlate.CeilingNote(quantileOf(im))
}

// FmtInt renders a whole number without separators.
func FmtInt(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
}

// clock renders an instant as "07:31 UTC".
func clock(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format("15:04") + " UTC"
}

// impactViews builds the impact block, hardest hit first, at most four
// models (the rest are counted).
func impactViews(a *correlate.Analysis, s State, now time.Time) []ImpactView {
	var out []ImpactView
	for i, im := range a.Impact {
		if i == 4 {
			break
		}
		v := ImpactView{Model: im.Model, Quantile: quantileOf(im), Baseline: msOrDash(im.BaselineP99Ms), Now: nowOf(im), Status: im.Status}
		if im.BaselineP99Ms > 0 && im.Rise > 0 {
			v.Rise = "×" + trimZero(strconv.FormatFloat(im.Rise, 'f', 1, 64))
			if correlate.AtCeiling(im.DuringP99Ms, im.CeilingMs) {
				v.Rise = "at least " + v.Rise
			}
		}
		v.Peak, v.PeakAt, v.Ceiling = peakOf(im), clock(im.PeakAt), ceilingOf(im)
		if im.NowP99Ms == 0 {
			v.Now = "–"
		} else {
			v.NowAt = clock(im.NowAt)
		}
		switch {
		case im.Status == "recovered" && im.RecoveredAt != nil:
			v.StatusText = "recovered at " + clock(im.RecoveredAt)
		case im.Status == "recovered":
			v.StatusText = "recovered"
		default:
			v.Status = "ongoing"
			v.StatusText = "ongoing at the end of the data"
			if im.NowAt != nil && !now.IsZero() && now.Sub(*im.NowAt) > staleData {
				// Say when the analysed window ends, so "ongoing" is not
				// read as now. NowAt is that end, not the last point
				// stored: newer data may exist, so this is no "data stops".
				v.StatusText = "ongoing at the end of the analysed data (" + clockOf(*im.NowAt, now) + ", " + Ago(*im.NowAt, now) + ")"
			}
		}
		if a.Samples.SlowRequests > 0 {
			c := slowOfModel(a, im)
			v.Slow, v.SlowRaw, v.SlowNote = c.Text, c.Raw, c.Note
		}
		for j, t := range im.Tenants {
			if j == 3 || t.SlowShare == nil || *t.SlowShare < 0.1 {
				break
			}
			l := filterLink(map[string]string{"tenant": t.Name}, s)
			l.Text = t.Name + " " + FmtPct(100**t.SlowShare)
			l.Title = FmtPct(100**t.SlowShare) + " of " + im.Model + "'s slow requests"
			if im.SlowBasis == correlate.SlowBasisSpikeTail {
				l.Title = FmtPct(100**t.SlowShare) + " of " + im.Model + "'s slowest tenth of requests (no baseline)"
			}
			if t.TrafficShare != nil {
				l.Title += ", " + FmtPct(100**t.TrafficShare) + " of its requests"
			}
			v.Tenants = append(v.Tenants, l)
		}
		if im.SLO != nil {
			slo := "SLO " + FmtMs(im.SLO.SLOMs) + ": " + FmtNum(im.SLO.MinutesOver) + " min over"
			if im.SLO.BudgetBurned != nil {
				slo += ", " + FmtPct(100**im.SLO.BudgetBurned) + " of the 30-day error budget"
			}
			v.SLO = slo
		}
		out = append(out, v)
	}
	return out
}

// storyChecklist turns the analysis' checklist into one line per step:
// the step's key fact (the evidence item, event or concentration row the
// analysis says it quotes), with the full answer one click away.
func storyChecklist(a *correlate.Analysis, s State) []CheckStep {
	var top *correlate.Cause
	if len(a.Causes) > 0 && a.Causes[0].Category != correlate.CatUnexplained {
		top = &a.Causes[0]
	}
	evidence := func(name string) string {
		if top == nil || name == "" {
			return ""
		}
		for _, e := range top.Evidence {
			if e.Name == name {
				return e.Summary
			}
		}
		return ""
	}
	out := make([]CheckStep, 0, len(a.Checklist))
	for _, st := range a.Checklist {
		t, ok := checkTitles[st.Step]
		if !ok {
			t = [2]string{st.Step, "#"}
		}
		c := CheckStep{Step: st.Step, Title: t[0], Answer: st.Answer, Anchor: t[1]}
		switch st.Step {
		case "scope":
			c.Key = firstSentence(a.Scope.Summary)
			if c.Key == "" {
				c.Key = firstSentence(st.Answer)
			}
		case "timeline":
			c.Key = firstSentence(st.Answer)
			// The next sentence may open with a lower-case name (a replica's),
			// which firstSentence does not split at: it may hold the evidence.
			if e := evidence(st.Evidence); e != "" && (st.Event != "" || st.Curve != "") {
				if !strings.Contains(c.Key, e) {
					c.Key += " " + e
				}
			} else if ev := findEvent(a.Events, st.Event); ev != nil {
				c.Key += " " + capitalize(EventLabel(ev.Event)) + " " + offsetWords(ev.OffsetS) + "."
			}
		case "samples":
			if row, ok := findRow(a.Concentration, st.Row); ok {
				name := DimsKey(row.Dims)
				// The analysis decided whether it fell back to the row
				// explaining most of the tail; the page says what it said.
				lead := correlate.RowLead(st.Fallback, row.TailShare > 0) + " "
				// A folded row is named with what it is the same as: on
				// its own, "version=v3.1.1" of a model that ran only v3.1.1
				// reads as a version problem in a dependency's incident.
				c.Key = lead + name + sameAs(row.Also) + " (" + FmtPct(row.SelectionPct) + " of slow requests vs " + FmtPct(row.BaselinePct) + " of the others)."
				c.Row = name
				c.RowHref, c.RowGet = concHref(row, a, s), concHref(row, a, s.WithoutWindow())
			} else {
				// No row to quote: the count, then what the samples say.
				c.Key = firstSentence(st.Answer)
				if rest := strings.TrimSpace(strings.TrimPrefix(st.Answer, c.Key)); rest != "" {
					c.Key += " " + firstSentence(rest)
				}
			}
		default:
			c.Key = firstSentence(st.Answer)
		}
		if strings.TrimSpace(c.Key) == strings.TrimSpace(c.Answer) {
			c.Answer = ""
		}
		out = append(out, c)
	}
	return out
}

// sameAs renders a folded row's equivalent values: " ≡ model=m ≡ entry=/e".
func sameAs(also map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(also)) {
		b.WriteString(" ≡ " + k + "=" + also[k])
	}
	return b.String()
}

func findEvent(evs []correlate.AlignedEvent, id string) *correlate.AlignedEvent {
	if id == "" {
		return nil
	}
	for i := range evs {
		if evs[i].ID == id {
			return &evs[i]
		}
	}
	return nil
}

func findRow(rows []correlate.Concentration, dims map[string]string) (correlate.Concentration, bool) {
	if len(dims) == 0 {
		return correlate.Concentration{}, false
	}
	want := DimsKey(dims)
	for _, r := range rows {
		if DimsKey(r.Dims) == want {
			return r, true
		}
	}
	return correlate.Concentration{}, false
}

// offsetWords says when an event came relative to the onset: "12 min
// before the onset".
func offsetWords(s float64) string {
	d := FmtDuration(time.Duration(math.Abs(s)) * time.Second)
	if s < 0 {
		return d + " before the onset"
	}
	if s == 0 {
		return "at the onset"
	}
	return d + " after the onset"
}

// firstSentence is s up to its first sentence end (". " followed by a
// capital letter), so decimals and abbreviations do not cut it.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && s[i+2] >= 'A' && s[i+2] <= 'Z' {
			return s[:i+1]
		}
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// concHref is the link a concentration row filters the page with. Rows on
// a dimension the page cannot filter by (replica_age) use an equivalent
// value that selects the same requests (Also), or the young replicas
// the analysis found among the row's models (one replica: that replica;
// several: their model).
func concHref(r correlate.Concentration, a *correlate.Analysis, s State) string {
	dims := concDims(r, a)
	if dims == nil {
		return ""
	}
	if s.FilteredTo(dims) { // selected: a second click clears it
		return s.WithFilters(nil).URL()
	}
	return s.WithFilters(dims).URL()
}

// concDims is the filter a concentration row's link sets.
func concDims(r correlate.Concentration, a *correlate.Analysis) map[string]string {
	dims := filterableDims(r.Dims)
	if dims == nil {
		dims = filterableDims(r.Also)
	}
	if dims == nil && r.Dims["replica_age"] != "" && a != nil {
		var young []correlate.ReplicaComparison
		for _, rc := range a.Replicas {
			if rc.Young == (r.Dims["replica_age"] == "young") && (len(r.Models) == 0 || containsString(r.Models, rc.Model)) {
				young = append(young, rc)
			}
		}
		switch {
		case len(young) == 1:
			dims = map[string]string{"replica": young[0].Replica}
		case len(r.Models) > 0:
			dims = map[string]string{"model": r.Models[0]}
		}
		for k, v := range r.Dims {
			if dims != nil && k != "replica_age" && FilterDims[k] {
				dims[k] = v
			}
		}
	}
	if dims == nil && len(r.Models) > 0 {
		dims = map[string]string{"model": r.Models[0]}
	}
	return dims
}

// unfilterable lists the dimensions of dims the page cannot filter on.
func unfilterable(dims map[string]string) []string {
	var out []string
	for k := range dims {
		if !FilterDims[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// filterableDims is dims when the page can filter on all of them.
func filterableDims(dims map[string]string) map[string]string {
	if len(dims) == 0 {
		return nil
	}
	for k := range dims {
		if !FilterDims[k] {
			return nil
		}
	}
	return dims
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TenantDriver is the tenant that drives the incident's traffic, as a
// chip that filters the page to it: the one the top cause names, else a
// tenant sending at least half of the hardest-hit model's slow requests.
func TenantDriver(a *correlate.Analysis, s State) *Link {
	if a == nil {
		return nil
	}
	name, what := "", ""
	if len(a.Causes) > 0 && a.Causes[0].Target.Tenant != "" {
		name, what = a.Causes[0].Target.Tenant, "named by the top cause"
	}
	if len(a.Impact) > 0 {
		for _, t := range a.Impact[0].Tenants {
			if t.SlowShare == nil {
				continue
			}
			if name == "" && *t.SlowShare >= 0.5 || name == t.Name {
				name, what = t.Name, FmtPct(100**t.SlowShare)+" of slow requests"
				break
			}
		}
	}
	if name == "" {
		return nil
	}
	l := filterLink(map[string]string{"tenant": name}, s)
	l.Text = "tenant " + name + ": " + what
	return &l
}
