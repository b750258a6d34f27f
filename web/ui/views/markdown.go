package views

import (
	"fmt"
	"math"
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
	Permalink string
	Now       time.Time
}

// Markdown renders an incident for a postmortem or a ticket: header, top
// causes with evidence, aligned events, stages, concentration, checklist
// and the permalink. Table cells are escaped so a summary with "|" cannot
// break a table.
func Markdown(in MarkdownInput) string {
	var b strings.Builder
	inc, a := in.Incident, in.Analysis
	fmt.Fprintf(&b, "# Incident #%d: %s\n\n", inc.ID, inc.Title)
	end := "ongoing"
	if inc.End != nil {
		end = FmtTime(*inc.End, time.Time{})
	}
	fmt.Fprintf(&b, "- **Status:** %s (opened by %s)\n", inc.Status, inc.Source)
	fmt.Fprintf(&b, "- **Window:** %s – %s\n", FmtTime(inc.Start, time.Time{}), end)
	if sc := inc.Scope.String(); sc != "" {
		fmt.Fprintf(&b, "- **Scope (as opened):** %s\n", sc)
	}
	fmt.Fprintf(&b, "- **Permalink:** %s\n", in.Permalink)
	if a == nil {
		b.WriteString("\n_No analysis is ready yet._\n")
		return b.String()
	}
	if a.Scope.Summary != "" {
		fmt.Fprintf(&b, "- **Scope:** %s\n", a.Scope.Summary)
	}
	if a.Onset != nil {
		fmt.Fprintf(&b, "- **Onset:** %s\n", FmtTime(*a.Onset, time.Time{}))
	}
	if a.P99BeforeMs > 0 || a.P99DuringMs > 0 {
		fmt.Fprintf(&b, "- **P99 before → during:** %s → %s\n", FmtMs(a.P99BeforeMs), FmtMs(a.P99DuringMs))
	}
	fmt.Fprintf(&b, "- **Analysis:** version %d, exported %s\n", in.Version, FmtTime(in.Now, time.Time{}))

	b.WriteString("\n## Likely causes\n\n")
	if len(a.Causes) == 0 {
		b.WriteString("No cause found.\n")
	}
	for i, c := range a.Causes {
		if i == 3 {
			fmt.Fprintf(&b, "_%d more causes with lower scores on the permalink._\n\n", len(a.Causes)-3)
			break
		}
		fmt.Fprintf(&b, "### %d. %s — score %.2f\n\n%s\n\n", i+1, CategoryLabel(string(c.Category)), c.Score, c.Summary)
		if t := targetString(c.Target); t != "" {
			fmt.Fprintf(&b, "Target: `%s`\n\n", t)
		}
		for _, e := range c.Evidence {
			fmt.Fprintf(&b, "- ✔ %s (`%s` = %s)\n", e.Summary, e.Name, FmtNum(e.Value))
		}
		for _, e := range c.CounterEvidence {
			fmt.Fprintf(&b, "- ✘ %s (`%s` = %s)\n", e.Summary, e.Name, FmtNum(e.Value))
		}
		if len(c.Actions) > 0 {
			b.WriteString("\nSuggested action:\n\n")
			for _, act := range c.Actions {
				fmt.Fprintf(&b, "- [ ] %s\n", act)
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("## Timeline\n\n")
	evs := append([]correlate.AlignedEvent(nil), a.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	rows := [][]string{}
	for _, e := range evs {
		rows = append(rows, []string{FmtTime(e.Time, time.Time{}), fmt.Sprintf("%+.0f s", e.OffsetS), string(e.Kind), e.Scope.String(),
			e.Summary, fmt.Sprintf("%.2f", e.TimeWeight*e.ScopeMatch)})
	}
	if a.Onset != nil {
		rows = append(rows, []string{FmtTime(*a.Onset, time.Time{}), "0 s", "**onset**", "", "latency rose", ""})
		sort.SliceStable(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	}
	if len(rows) == 0 {
		b.WriteString("No events in the window.\n")
	} else {
		table(&b, []string{"Time", "From onset", "Kind", "Scope", "Summary", "Weight"}, rows)
	}

	b.WriteString("\n## Stages (slow requests, before → during)\n\n")
	if len(a.Stages) == 0 {
		b.WriteString("No stage data.\n")
	} else {
		rows = rows[:0]
		for _, s := range a.Stages {
			rows = append(rows, []string{s.Stage, FmtMs(s.BeforeMs), FmtMs(s.DuringMs), signedMs(s.DeltaMs),
				"[" + FmtNum(s.DeltaLoMs) + ", " + FmtNum(s.DeltaHiMs) + "] ms", FmtPct(100 * s.Share)})
		}
		table(&b, []string{"Stage", "Before", "During", "Delta", "Interval", "Share"}, rows)
	}

	b.WriteString("\n## Where slow requests concentrate\n\n")
	if len(a.Concentration) == 0 {
		b.WriteString("No concentration found.\n")
	} else {
		rows = rows[:0]
		for i, c := range a.Concentration {
			if i == 10 {
				break
			}
			rows = append(rows, []string{DimsKey(c.Dims), FmtPct(c.SelectionPct), FmtPct(c.BaselinePct), "×" + FmtNum(c.RiskRatio),
				FmtPct(100 * c.Support), FmtMs(c.P99WithoutMs)})
		}
		table(&b, []string{"Dimension", "Slow", "Others", "Risk ratio", "Support", "P99 without"}, rows)
	}

	b.WriteString("\n## Checklist\n\n")
	for i, s := range a.Checklist {
		title := s.Step
		if t, ok := checkTitles[s.Step]; ok {
			title = t[0]
		}
		fmt.Fprintf(&b, "%d. **%s:** %s\n", i+1, title, s.Answer)
	}
	fmt.Fprintf(&b, "\n---\nExported from Waterline: %s\n", in.Permalink)
	return b.String()
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

// table writes a GitHub-flavoured Markdown table.
func table(b *strings.Builder, head []string, rows [][]string) {
	cell := strings.NewReplacer("|", `\|`, "\n", " ", "\r", "")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + cell.Replace(c) + " |")
		}
		b.WriteString("\n")
	}
}
