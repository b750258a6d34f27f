package views

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// MarkdownInput is what an incident's Markdown export contains.
type MarkdownInput struct {
	Incident  store.Incident
	Analysis  *correlate.Analysis
	Version   int
	Permalink string // the signed-in page
	ShareURL  string // the read-only share link, when one exists
	ImageURL  string // the chart card (og.png) anyone with the link can load; "" for none
	// ChartLink is the chart card for readers who sign in: linked, not
	// embedded (a ticket's or a wiki's image fetcher sends no session,
	// and an embedded one showed as a broken image).
	ChartLink string
	Now       time.Time
}

// Markdown renders an incident for a postmortem or a ticket, from the
// analysis' story (the same headline, impact, counts and checklist the
// page shows): the links, peak, recovery and duration, the impact per
// model, every cause (those ruled out too, with the reason), the events
// the causes rest on, stages, concentration and the checklist.
//
// Everything that comes from outside (titles, summaries, names) is
// escaped for Markdown: one line, no HTML, no link or image syntax; the
// only links are the export's own, and only http(s) ones.
func Markdown(in MarkdownInput) string {
	var b strings.Builder
	inc, a := in.Incident, in.Analysis
	title := inc.Title
	if a != nil && a.Headline.Title != "" {
		title = a.Headline.Title
	}
	fmt.Fprintf(&b, "# Incident #%d: %s\n\n", inc.ID, mdText(title))
	if title != inc.Title && inc.Title != "" {
		fmt.Fprintf(&b, "- **Opened as:** %s\n", mdText(inc.Title))
	}
	fmt.Fprintf(&b, "- **Status:** %s (%s)\n", mdText(inc.Status), mdText(correlate.OpenedBy(inc.Source)))
	end := "ongoing"
	if inc.End != nil {
		end = FmtTime(*inc.End, time.Time{})
	}
	fmt.Fprintf(&b, "- **Window:** %s – %s\n", FmtTime(inc.Start, time.Time{}), end)
	if sc := inc.Scope.String(); sc != "" {
		fmt.Fprintf(&b, "- **Scope (as opened):** %s\n", mdText(sc))
	}
	if l := mdLink(in.ShareURL, in.ShareURL); l != "" {
		fmt.Fprintf(&b, "- **Share link (read-only, no sign-in):** %s\n", l)
	}
	if l := mdLink(in.Permalink, in.Permalink); l != "" {
		fmt.Fprintf(&b, "- **Permalink (signed in):** %s\n", l)
	}
	if a == nil {
		b.WriteString("\n_No analysis is ready yet._\n")
		return b.String()
	}
	if a.Onset != nil {
		fmt.Fprintf(&b, "- **Onset:** %s\n", onsetWhen(a))
	}
	if len(a.Impact) > 0 {
		im := a.Impact[0]
		if im.PeakAt != nil {
			fmt.Fprintf(&b, "- **Peak:** %s %s %s at %s (baseline %s)", mdText(im.Model), quantileOf(im), peakOf(im),
				FmtTime(*im.PeakAt, time.Time{}), msOrDash(im.BaselineP99Ms))
			if n := ceilingOf(im); n != "" {
				b.WriteString("; " + n)
			}
			b.WriteString("\n")
		}
		if im.RecoveredAt != nil {
			fmt.Fprintf(&b, "- **Recovered:** %s\n", FmtTime(*im.RecoveredAt, time.Time{}))
		} else {
			now := ""
			if im.NowAt != nil {
				now = " (" + quantileOf(im) + " " + nowOf(im) + " at " + FmtTime(*im.NowAt, time.Time{}) + ")"
			}
			fmt.Fprintf(&b, "- **Recovered:** not yet, ongoing at the end of the data%s\n", now)
		}
		if a.Onset != nil {
			end, soFar := im.RecoveredAt, ""
			if end == nil {
				end, soFar = im.NowAt, " so far"
			}
			switch {
			case end == nil:
			case a.OnsetGapFrom != nil:
				// The rise came somewhere in the hole before the onset.
				fmt.Fprintf(&b, "- **Duration:** between %s and %s%s (the rise came in a gap in the latency data)\n",
					FmtDuration(end.Sub(*a.Onset)), FmtDuration(end.Sub(*a.OnsetGapFrom)), soFar)
			default:
				fmt.Fprintf(&b, "- **Duration:** %s%s\n", FmtDuration(end.Sub(*a.Onset)), soFar)
			}
		}
	}
	if a.Samples.SlowRequests > 0 {
		c := slowTotal(a, mdText)
		if c.Note != "" {
			c.Text += " (" + c.Note + ")"
		}
		fmt.Fprintf(&b, "- **Slow requests:** %s\n", c.Text)
	}
	if a.Scope.Summary != "" {
		fmt.Fprintf(&b, "- **Scope:** %s\n", mdText(a.Scope.Summary))
	}
	fmt.Fprintf(&b, "- **Analysis:** version %d, exported %s\n", in.Version, FmtTime(in.Now, time.Time{}))
	if a.Reconciliation != "" {
		fmt.Fprintf(&b, "\n> %s\n", mdText(a.Reconciliation))
	}
	if img := mdImage("Latency chart of the incident", in.ImageURL); img != "" {
		b.WriteString("\n" + img + "\n")
	} else if u := safeURL(in.ChartLink); u != "" {
		fmt.Fprintf(&b, "- **Chart:** <%s> (sign-in required)\n", u)
	}

	if len(a.Impact) > 0 {
		b.WriteString("\n## Impact\n\n")
		var rows [][]string
		for _, im := range a.Impact {
			peak, status := peakOf(im), "ongoing at the end of the data"
			if im.PeakAt != nil {
				peak += " at " + clock(im.PeakAt)
			}
			if im.RecoveredAt != nil {
				status = "recovered at " + clock(im.RecoveredAt)
			}
			var tenants []string
			for i, t := range im.Tenants {
				if i == 3 || t.SlowShare == nil {
					break
				}
				tenants = append(tenants, t.Name+" "+FmtPct(100**t.SlowShare))
			}
			slow := "–"
			if a.Samples.SlowRequests > 0 {
				if c := slowOfModel(a, im); c.Note != "" {
					slow = c.Text + ": no baseline"
				} else {
					slow = c.Text
				}
			}
			rows = append(rows, []string{im.Model, quantileOf(im), msOrDash(im.BaselineP99Ms), peak, nowOf(im), status, slow, strings.Join(tenants, ", ")})
		}
		table(&b, []string{"Model", "Quantile", "Baseline", "Peak", "Now", "Status", "Slow requests", "Tenants hit"}, rows)
	}

	b.WriteString("\n## Likely causes\n\n")
	if len(a.Causes) == 0 {
		b.WriteString("No cause found.\n\n")
	}
	for i, c := range a.Causes {
		score := fmt.Sprintf(" — score %.2f", c.Score)
		if c.Category == correlate.CatUnexplained { // its score is a shortfall, not a likelihood
			score = ""
		}
		fmt.Fprintf(&b, "### %d. %s%s\n\n%s\n\n", i+1, CategoryLabel(string(c.Category)), score, mdText(c.Summary))
		if t := targetString(c.Target); t != "" {
			fmt.Fprintf(&b, "Target: %s\n\n", mdText(t))
		}
		for _, e := range c.Evidence {
			fmt.Fprintf(&b, "- ✔ %s (%s)\n", mdText(e.Summary), mdText(evidenceView(e).Value))
		}
		for _, e := range c.CounterEvidence {
			fmt.Fprintf(&b, "- ✘ %s (%s)\n", mdText(e.Summary), mdText(evidenceView(e).Value))
		}
		if len(c.Actions) > 0 {
			b.WriteString("\nSuggested action:\n\n")
			for _, act := range c.Actions {
				fmt.Fprintf(&b, "- [ ] %s\n", mdText(act))
			}
		}
		for _, pf := range PoolFacts(a, c) {
			fmt.Fprintf(&b, "\nPool of %s:\n\n- Replicas: %s\n- Scaling: %s\n- Autoscaler limits: %s\n",
				mdText(pf.Model), mdText(pf.Replicas), mdText(pf.Scaling), mdText(pf.Limits))
		}
		b.WriteString("\n")
	}
	if ruled := ruledOutReasons(a, len(a.Impact) > 0); len(ruled) > 0 {
		b.WriteString("### Ruled out or not assessable\n\n")
		for _, r := range ruled {
			fmt.Fprintf(&b, "- %s\n", r)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Timeline\n\n")
	used := map[string]bool{}
	for _, c := range a.Causes {
		for _, e := range append(append([]correlate.Evidence(nil), c.Evidence...), c.CounterEvidence...) {
			if e.Event != "" {
				used[e.Event] = true
			}
		}
	}
	type tlRow struct {
		t    time.Time
		cols []string
	}
	var tl []tlRow
	onsetWords := func(t time.Time) string {
		if a.Onset == nil {
			return ""
		}
		return offsetWords(t.Sub(*a.Onset).Seconds())
	}
	evs := append([]correlate.AlignedEvent(nil), a.Events...)
	sort.SliceStable(evs, func(i, j int) bool {
		return evs[i].TimeWeight*evs[i].ScopeMatch > evs[j].TimeWeight*evs[j].ScopeMatch
	})
	for i, e := range evs {
		if i >= 20 && !used[e.ID] {
			continue // the causes' events always, the rest up to twenty
		}
		use := ""
		if used[e.ID] {
			use = "yes"
		}
		tl = append(tl, tlRow{e.Time, []string{FmtTime(e.Time, time.Time{}), onsetWords(e.Time), string(e.Kind), e.Scope.String(), e.Summary, use}})
	}
	if a.Onset != nil { // set only where a spike was found
		rose := "latency rose"
		if a.OnsetGapFrom != nil {
			rose = "latency first seen risen, after no latency data since " + FmtTime(*a.OnsetGapFrom, time.Time{})
		}
		tl = append(tl, tlRow{*a.Onset, []string{FmtTime(*a.Onset, time.Time{}), "onset", "latency", "", rose, ""}})
	}
	if len(a.Impact) > 0 {
		im := a.Impact[0]
		if im.PeakAt != nil {
			tl = append(tl, tlRow{*im.PeakAt, []string{FmtTime(*im.PeakAt, time.Time{}), onsetWords(*im.PeakAt), "latency", im.Model,
				"peak " + quantileOf(im) + " " + peakOf(im), ""}})
		}
		if im.RecoveredAt != nil {
			tl = append(tl, tlRow{*im.RecoveredAt, []string{FmtTime(*im.RecoveredAt, time.Time{}), onsetWords(*im.RecoveredAt), "latency", im.Model, "recovered", ""}})
		}
	}
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].t.Before(tl[j].t) })
	if len(tl) == 0 {
		b.WriteString("No change event from an hour before the onset to the end of the window.\n")
	} else {
		rows := make([][]string, len(tl))
		for i, r := range tl {
			rows[i] = r.cols
		}
		table(&b, []string{"Time", "From onset", "Kind", "Scope", "Summary", "Used by a cause"}, rows)
	}
	var curves []string
	if top := topOf(a); top != nil {
		for _, e := range top.Evidence {
			if e.Curve != "" && e.Event == "" {
				curves = append(curves, mdText(e.Summary))
			}
		}
	}
	if len(curves) > 0 {
		b.WriteString("\nCurves the top cause rests on:\n\n")
		for _, c := range curves {
			fmt.Fprintf(&b, "- %s\n", c)
		}
	}

	if a.StageSource == "curves" {
		b.WriteString("\n## Where the time went (mean of all requests, from stage-time curves, before → during)\n\n")
	} else {
		b.WriteString("\n## Where the time went (slow requests, before → during)\n\n")
	}
	if len(a.Stages) == 0 {
		b.WriteString("No stage data.\n")
	} else {
		var rows [][]string
		for _, s := range a.Stages {
			if s.BeforeMs <= 0 && s.DuringMs <= 0 {
				rows = append(rows, []string{s.Stage, "not timed", "not timed", "–", "–", "–"})
				continue
			}
			interval := "[" + FmtNum(s.DeltaLoMs) + ", " + FmtNum(s.DeltaHiMs) + "] ms"
			if a.StageSource == "curves" || s.DeltaLoMs == s.DeltaHiMs {
				interval = "–"
			}
			rows = append(rows, []string{s.Stage, FmtMs(s.BeforeMs), FmtMs(s.DuringMs), signedMs(s.DeltaMs), interval, FmtPct(100 * s.Share)})
		}
		table(&b, []string{"Stage", "Before", "During", "Delta", "Interval", "Share"}, rows)
	}

	b.WriteString("\n## Where slow requests concentrate\n\n")
	if len(a.Concentration) == 0 {
		b.WriteString("No concentration found.\n")
	} else {
		var rows [][]string
		for i, c := range a.Concentration {
			if i == 10 {
				break
			}
			without := "–" // a share: the samples' P99 in ms is another figure than the impact's
			if c.TailShare > 0 {
				without = FmtPct(100 * c.TailShare)
			}
			name := DimsKey(c.Dims)
			if len(c.Also) > 0 && c.Label != "" {
				name = c.Label
			}
			rows = append(rows, []string{name, FmtPct(c.SelectionPct), FmtPct(c.BaselinePct), "×" + FmtNum(c.RiskRatio),
				FmtPct(100 * c.Support), without})
		}
		table(&b, []string{"Dimension", "Slow", "Others", "Risk ratio", "Support", "Tail explained"}, rows)
	}

	b.WriteString("\n## Checklist\n\n")
	for i, s := range a.Checklist {
		title := s.Step
		if t, ok := checkTitles[s.Step]; ok {
			title = t[0]
		}
		fmt.Fprintf(&b, "%d. **%s:** %s\n", i+1, mdText(title), mdText(s.Answer))
	}
	link := mdLink(in.ShareURL, in.ShareURL)
	if link == "" {
		link = mdLink(in.Permalink, in.Permalink)
	}
	fmt.Fprintf(&b, "\n---\nExported from Waterline: %s\n", link)
	return b.String()
}

func topOf(a *correlate.Analysis) *correlate.Cause {
	if len(a.Causes) == 0 || a.Causes[0].Category == correlate.CatUnexplained {
		return nil
	}
	return &a.Causes[0]
}

// ruledOutReasons lists every category that is not a supported cause,
// with why: its strongest counter-evidence, no supporting evidence, or
// the signal it needs is missing.
func ruledOutReasons(a *correlate.Analysis, judged bool) []string {
	var out []string
	scored := map[correlate.Category]bool{}
	for _, c := range a.Causes {
		scored[c.Category] = true
	}
	na := map[correlate.Category]string{}
	for _, n := range a.NotAssessable {
		na[n.Category] = n.Reason
	}
	for _, cat := range correlate.Categories {
		label := CategoryLabel(string(cat))
		switch {
		case na[cat] != "":
			out = append(out, label+": "+mdText(na[cat]))
		case !scored[cat] && judged: // with no judged rise nothing was ruled out
			out = append(out, label+": ruled out, no supporting evidence in this window")
		}
	}
	return out
}

func signedMs(v float64) string {
	if v > 0 && !math.IsNaN(v) {
		return "+" + FmtMs(v)
	}
	return FmtMs(v)
}

func targetString(t correlate.Target) string {
	var parts []string
	for _, kv := range []KV{{"model", t.Model}, {"version", t.Version}, {"tenant", t.Tenant}, {"replica", t.Replica}, {"node", t.Node}} {
		if kv.V != "" {
			parts = append(parts, kv.K+"="+kv.V)
		}
	}
	if len(t.Replicas) > 0 {
		parts = append(parts, "replicas="+strings.Join(t.Replicas, ","))
	}
	if len(t.Models) > 0 {
		parts = append(parts, "models="+strings.Join(t.Models, ","))
	}
	return strings.Join(parts, " ")
}

// mdEscaper backslash-escapes the ASCII punctuation Markdown (CommonMark
// and GitHub's) gives a meaning to within a line, so text from outside can
// neither open an HTML tag, a link, an image, emphasis, code nor a table
// cell; line breaks become spaces, so it cannot start a line of its own
// (a heading, a list, a block quote).
var mdEscaper = strings.NewReplacer(
	"\r\n", " ", "\n", " ", "\r", " ", "\u2028", " ", "\u2029", " ", "\x00", "",
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "#", `\#`, "!", `\!`, "|", `\|`, "<", `\<`, ">", `\>`,
	"~", `\~`, "&", `\&`,
)

// mdText is s as one line of plain Markdown text.
func mdText(s string) string {
	s = mdEscaper.Replace(s)
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

// safeURL is u when it is an absolute http(s) URL without spaces or
// characters that could end a Markdown link early; "" otherwise.
func safeURL(u string) string {
	if u == "" || strings.ContainsAny(u, " <>()[]`\"'\\\n\r\t") {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return p.String()
}

// mdLink is a link to u (http or https only) as an autolink; "" when u
// is not safe.
func mdLink(_ string, u string) string {
	if s := safeURL(u); s != "" {
		return "<" + s + ">"
	}
	return ""
}

// mdImage is an image of u (http or https only); "" when u is not safe.
func mdImage(alt, u string) string {
	if s := safeURL(u); s != "" {
		return "![" + mdText(alt) + "](" + s + ")"
	}
	return ""
}

// table writes a GitHub-flavoured Markdown table; every cell is escaped.
func table(b *strings.Builder, head []string, rows [][]string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + mdText(c) + " |")
		}
		b.WriteString("\n")
	}
}

// msOrDash formats a latency, or "–" for none (a missing figure is
// stored as 0, which must not read as a measured 0 ms).
func msOrDash(v float64) string {
	if !(v > 0) {
		return "–"
	}
	return FmtMs(v)
}

// quantileOf names the quantile a model's impact figures hold (analyses
// stored before the field existed are P99).
func quantileOf(im correlate.Impact) string {
	if im.Quantile == "" {
		return "P99"
	}
	return im.Quantile
}
