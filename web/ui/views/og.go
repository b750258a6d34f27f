package views

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// OGInput is what a share link's unfurl card may say. Tenants lists every
// tenant name the incident's data mentions: they are scrubbed from the
// free text (the title), and nothing else free-form is used.
type OGInput struct {
	ID                  int64
	Title               string
	TopCategory         string
	TopScore            float64
	P99Before, P99After float64
	// AfterAtCeiling: P99After is the histogram's top bucket its quantile
	// curve sat at (correlate.Impact.CeilingMs), so only a lower bound.
	AfterAtCeiling bool
	// Model, Quantile ("P99" when empty) and Status ("ongoing",
	// "recovered") are the hardest-hit model's; Onset the spike's.
	Model, Quantile, Status string
	Onset                   *time.Time
	// OnsetGapFrom: the latency curve has no data from it to Onset, so
	// the rise is timed by the hole.
	OnsetGapFrom *time.Time
	// Verdict replaces the likely cause when the analysis claims none:
	// "Latency rise not judged", "No latency rise found", "No cause
	// stands out", "Analysis failed".
	Verdict    string
	URL, Image string
	Tenants    []string
}

// BuildOpenGraph makes the unfurl card: title, likely cause, the model's
// latency before → during, and since when. Cause summaries and sample
// content are never used (they name tenants and requests); the title is
// scrubbed of tenant names.
func BuildOpenGraph(in OGInput) *OpenGraph {
	title := "Incident #" + strconv.FormatInt(in.ID, 10)
	if t := ScrubTenants(in.Title, in.Tenants); t != "" {
		title += ": " + t
	}
	og := &OpenGraph{Title: title, URL: in.URL, Image: in.Image}
	var desc []string
	switch {
	case in.Verdict != "":
		desc = append(desc, in.Verdict)
		og.Labels = append(og.Labels, KV{OGLabelVerdict, in.Verdict})
	case in.TopCategory != "":
		cause := CategoryLabel(in.TopCategory) + " (" + strconv.FormatFloat(in.TopScore, 'f', 2, 64) + ")"
		desc = append(desc, "Likely cause: "+cause)
		og.Labels = append(og.Labels, KV{OGLabelCause, cause})
	default:
		desc = append(desc, "Analysis pending")
	}
	if in.P99Before > 0 || in.P99After > 0 {
		q := in.Quantile
		if q == "" {
			q = "P99"
		}
		what := strings.TrimSpace(in.Model + " " + q)
		after := FmtMs(in.P99After)
		if in.AfterAtCeiling {
			after = "≥ " + after
		}
		p := FmtMs(in.P99Before) + " → " + after
		line := what + " " + p
		if in.Status != "" {
			line += ", " + in.Status
		}
		desc = append(desc, line)
		og.Labels = append(og.Labels, KV{what, p})
	}
	switch {
	case in.Onset != nil && in.OnsetGapFrom != nil:
		// The rise came somewhere in a hole in the latency data.
		to := in.Onset.UTC().Format("15:04")
		if in.Onset.UTC().Format("2006-01-02") != in.OnsetGapFrom.UTC().Format("2006-01-02") {
			to = in.Onset.UTC().Format("Jan 2 15:04")
		}
		desc = append(desc, "rose between "+in.OnsetGapFrom.UTC().Format("Jan 2 15:04")+" and "+to+" UTC (no data in between)")
	case in.Onset != nil:
		// With its date: a card is read in chat hours or days later.
		desc = append(desc, "since "+in.Onset.UTC().Format("Jan 2 15:04")+" UTC")
	}
	og.Description = strings.Join(desc, " · ")
	return og
}

// OGLabelCause is the card label of the likely cause, OGLabelVerdict
// the label of what the analysis says instead when it claims none.
const (
	OGLabelCause   = "Likely cause"
	OGLabelVerdict = "Analysis"
)

// ScrubTenants replaces every tenant name in s (case-insensitively, longest
// first so "acme-eu" goes before "acme") with "[tenant]".
func ScrubTenants(s string, tenants []string) string {
	ts := append([]string(nil), tenants...)
	sort.Slice(ts, func(i, j int) bool { return len(ts[i]) > len(ts[j]) })
	for _, t := range ts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		s = regexp.MustCompile(`(?i)`+regexp.QuoteMeta(t)).ReplaceAllString(s, "[tenant]")
	}
	return s
}

// AnalysisTenants collects the tenant names an analysis mentions.
func AnalysisTenants(a *correlate.Analysis) []string {
	if a == nil {
		return nil
	}
	out := append([]string(nil), a.Scope.Tenants...)
	for _, c := range a.Causes {
		if c.Target.Tenant != "" {
			out = append(out, c.Target.Tenant)
		}
	}
	for _, r := range a.Concentration {
		if t := r.Dims["tenant"]; t != "" {
			out = append(out, t)
		}
	}
	for _, e := range a.Events {
		if e.Tenant != "" {
			out = append(out, e.Tenant)
		}
	}
	return out
}
