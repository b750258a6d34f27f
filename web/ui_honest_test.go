package web_test

import (
	"bytes"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// No sample or P99 curve before the onset gives chat a baseline, so its
// "slow" is the spike's own slowest tenth: 120 of its requests are slow
// by construction. The analysis' sentences said so, but the page header
// and the export read "Slow requests: 120" as a fact.
func TestUISlowCountWithoutABaselineIsNotAFact(t *testing.T) {
	e := newUIEnv(t)
	a := e.analysis()
	a.Samples.Slow, a.Samples.SlowRequests, a.Samples.SlowBasis = 120, 120, correlate.SlowBasisSpikeTail
	a.Impact = []correlate.Impact{{Model: "chat", BaselineP99Ms: 100, DuringP99Ms: 900, PeakP99Ms: 950, Rise: 9, Quantile: "P95", Status: "ongoing",
		SlowRequests: 120, SlowBasis: correlate.SlowBasisSpikeTail}}
	e.storeAnalysisOf(t, a)
	w := e.browser()
	w.login(e.write)

	p := w.get(e.incidentPath())
	total := p.testid("slow-total")
	if got := strings.TrimSpace(total.Text()); got != "not known" {
		t.Errorf("header's slow requests %q, want \"not known\"", got)
	}
	if note := p.testid("slow-total-note").Text(); !strings.Contains(note, "no baseline before the onset") || !strings.Contains(note, "slowest tenth") {
		t.Errorf("header's note %q does not say why", note)
	}
	if basis, _ := total.Attr("data-slow-basis"); basis != correlate.SlowBasisSpikeTail {
		t.Errorf("header's data-slow-basis %q", basis)
	}
	if cell, note := p.testid("impact-row").Find("[data-slow-requests]").Text(), p.testid("slow-note").Text(); cell != "not known" || note != "no baseline" {
		t.Errorf("impact row's slow requests %q (%q)", cell, note)
	}

	md := w.get(e.incidentPath() + "/export.md").body
	if !strings.Contains(md, "- **Slow requests:** not known (no baseline before the onset: the slowest tenth of the sampled requests during the spike stands in for the slow ones)") ||
		!strings.Contains(md, "| not known: no baseline |") || strings.Contains(md, "**Slow requests:** 120") || strings.Contains(md, "| 120 |") {
		t.Errorf("export states the spike's slowest tenth as its slow requests:\n%s", md)
	}

	// Beside a model with a baseline the total stands, and says whose
	// part is a slowest tenth.
	a.Samples.Slow, a.Samples.SlowRequests, a.Samples.SlowBasis = 300, 300, correlate.SlowBasisMixed
	a.Impact = append(a.Impact, correlate.Impact{Model: "embed", BaselineP99Ms: 10, DuringP99Ms: 40, PeakP99Ms: 45, Rise: 4, Quantile: "P99", Status: "ongoing",
		SlowRequests: 180, SlowBasis: correlate.SlowBasisBaseline})
	e.storeAnalysisOf(t, a)
	p = w.get(e.incidentPath())
	if got, note := strings.TrimSpace(p.testid("slow-total").Text()), p.testid("slow-total-note").Text(); got != "300" || !strings.Contains(note, "chat's part is its own slowest tenth") {
		t.Errorf("mixed: header %q (%q)", got, note)
	}
	md = w.get(e.incidentPath() + "/export.md").body
	if !strings.Contains(md, "- **Slow requests:** 300 (of which chat's part") || !strings.Contains(md, "| 180 |") {
		t.Errorf("mixed export:\n%s", md)
	}
}

// The latency curve has no points for 13 minutes before the onset (a
// scrape outage): the rise came somewhere in the hole. The timeline says
// so, but the page header, the export's onset and duration and the chat
// card gave the first point after the hole as the onset; and the onset
// marks of the timeline, the heatmap and the card's image were a line at
// that first point, as if the rise were timed to it.
func TestUIOnsetAfterAGapIsTimedByTheGap(t *testing.T) {
	e := newUIEnv(t)
	a := e.analysis()
	gap, onset := e.spikeAt.Add(-13*time.Minute), e.spikeAt
	rec := onset.Add(20 * time.Minute)
	a.OnsetGapFrom = &gap
	a.Impact = []correlate.Impact{{Model: "chat", BaselineP99Ms: 100, DuringP99Ms: 900, PeakP99Ms: 950, Rise: 9, Quantile: "P99", Status: "recovered", RecoveredAt: &rec}}
	e.storeAnalysisOf(t, a)
	w := e.browser()
	w.login(e.write)

	// The end of the hole is dated too when the hole spans midnight UTC
	// (the environment's spike is hours before now, whatever the hour).
	from, to, ogTo := gap.UTC().Format("2006-01-02 15:04:05"), onset.UTC().Format("15:04:05"), onset.UTC().Format("15:04")
	if gap.UTC().Format("2006-01-02") != onset.UTC().Format("2006-01-02") {
		to, ogTo = onset.UTC().Format("2006-01-02 15:04:05"), onset.UTC().Format("Jan 2 15:04")
	}
	when := "between " + from + " and " + to + " UTC (no latency data in between)"
	if got := w.get(e.incidentPath()).testid("onset-time").Text(); got != when {
		t.Errorf("header's onset %q, want %q", got, when)
	}
	md := w.get(e.incidentPath() + "/export.md").body
	for _, want := range []string{"- **Onset:** " + when, "- **Duration:** between 20 min and 33 min (the rise came in a gap in the latency data)"} {
		if !strings.Contains(md, want) {
			t.Errorf("export lacks %q:\n%s", want, md)
		}
	}
	p := e.browser().get(e.sharePath(t))
	desc, _ := p.doc.Find(`meta[property="og:description"]`).Attr("content")
	if want := "rose between " + gap.UTC().Format("Jan 2 15:04") + " and " + ogTo + " UTC (no data in between)"; !strings.Contains(desc, want) || strings.Contains(desc, "since ") {
		t.Errorf("og:description %q, want %q", desc, want)
	}

	// The pictures draw the rise as the whole gap.
	inc := w.get(e.incidentPath())
	mark := inc.testid("onset")
	if cls, _ := mark.Attr("class"); mark.Length() != 1 || !strings.Contains(cls, "tl-onset-gap") {
		t.Errorf("timeline's onset mark %q: want the gap drawn (tl-onset-gap)", cls)
	} else if style, _ := mark.Attr("style"); !strings.Contains(style, "width:") {
		t.Errorf("timeline's gap mark has no width: %q", style)
	} else if title, _ := mark.Attr("title"); !strings.Contains(title, "no latency data from "+from) {
		t.Errorf("timeline's gap mark title %q", title)
	}
	if inc.doc.Find(".heat-onset").Length() > 0 && inc.doc.Find(".heat-onset.onset-gap").Length() != 1 {
		t.Errorf("heatmap's onset mark is a line, not the gap")
	}
	img, err := png.Decode(bytes.NewReader([]byte(e.browser().get(e.sharePath(t) + "/og.png").body)))
	if err != nil {
		t.Fatal(err)
	}
	// Columns of the chart's upper part (clear of its labels) holding the
	// onset colour: a line is 3 px wide; a 13-minute gap is tens of px.
	onsetRGB := color.RGBA{0xd5, 0x5e, 0x00, 0xff}
	cols := 0
	for x := 40; x < 1160; x++ {
		for y := 300; y < 500; y++ {
			if color.RGBAModel.Convert(img.At(x, y)) == onsetRGB {
				cols++
				break
			}
		}
	}
	if cols < 20 {
		t.Errorf("og.png marks the onset on %d columns: a line, not the 13-minute gap", cols)
	}
}
