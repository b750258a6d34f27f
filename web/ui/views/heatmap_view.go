package views

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Heatmap is the samples' latency over time: columns of time, rows of
// latency on a log scale, each cell shaded by how many requests it holds.
// A brush over it selects requests (a time range and a latency band) and
// the page compares them with the rest of the window, BubbleUp-style.
type Heatmap struct {
	FromMs, ToMs int64
	LoMs, HiMs   float64 // the latency axis (log scale), bottom and top
	Cols, Rows   int
	Cells        string // Rows×Cols shade levels "0"…"9", top row first
	SlowMs       float64
	// SlowOfSeveral says SlowMs is the lowest of several models' slow
	// thresholds, not the one threshold of every sample drawn.
	SlowOfSeveral bool
	// SlowOff says SlowMs falls outside the latency axis, so no dashed
	// line is drawn for it (app.js draws it only strictly inside).
	SlowOff bool
	Ticks   []string // latency labels, top to bottom
	URL     string   // the view the selection is computed for
	Empty   string
	// Count is how many samples the view's window holds (Of says whose
	// and which window); the caller may set the stored count, as the
	// samples drawn are thinned.
	Count    int
	Of       string  // "of all models in this view (16:03–19:07 UTC)"
	XTicks   []Tick  // the time axis, as the timeline's
	OnsetPct float64 // where the onset falls across; 0 when unknown or outside
	// OnsetGapPct, when over 0, is where the latency data stopped before
	// the onset: the rise is drawn as the gap up to OnsetPct.
	OnsetGapPct float64
}

// SetOnset marks the onset on the time axis when it falls inside, and the
// gap in the latency data before it (gapFrom; nil: none) as where the
// rise happened.
func (h *Heatmap) SetOnset(onset, gapFrom *time.Time) {
	if onset == nil || h.ToMs <= h.FromMs {
		return
	}
	pct := func(ms int64) float64 { return 100 * float64(ms-h.FromMs) / float64(h.ToMs-h.FromMs) }
	if ms := onset.UnixMilli(); ms > h.FromMs && ms < h.ToMs {
		h.OnsetPct = pct(ms)
		if gapFrom != nil && gapFrom.Before(*onset) {
			h.OnsetGapPct = math.Max(pct(gapFrom.UnixMilli()), 0.001)
		}
	}
}

// heatCols and heatRows size the grid: fine enough to brush, small
// enough to ship as one string.
const heatCols, heatRows = 120, 24

// BuildHeatmap grids samples between from and to.
func BuildHeatmap(samples []correlate.Sample, from, to time.Time, slowMs float64, s State) Heatmap {
	h := Heatmap{FromMs: from.UnixMilli(), ToMs: to.UnixMilli(), Cols: heatCols, Rows: heatRows, SlowMs: slowMs, URL: s.URL(),
		XTicks: ticks(from, to), Of: samplesOf(State{Scope: s.Scope}) + " in this view (" + FmtSpan(from, to) + ")"}
	lo, hi := math.Inf(1), 0.0
	for _, x := range samples {
		if plotted(x) {
			lo, hi = math.Min(lo, x.TotalMs), math.Max(hi, x.TotalMs)
		}
	}
	if hi <= 0 || to.Sub(from) <= 0 {
		h.Empty = "No request samples in this window."
		return h
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi*1.0001)))
	h.LoMs, h.HiMs = lo, hi
	h.SlowOff = slowMs > 0 && (slowMs <= lo || slowMs >= hi)
	grid := make([]float64, heatCols*heatRows)
	span := float64(to.Sub(from).Milliseconds())
	for _, x := range samples {
		c, r, ok := h.cell(x, span)
		if !ok {
			continue
		}
		grid[r*heatCols+c] += weight(x)
		h.Count++
	}
	top := 0.0
	for _, v := range grid {
		top = math.Max(top, v)
	}
	var b strings.Builder
	for _, v := range grid {
		lvl := 0
		if v > 0 {
			// log shading: one request is still visible next to thousands
			lvl = 1 + int(8*math.Log1p(v)/math.Log1p(top))
		}
		b.WriteByte(byte('0' + min(lvl, 9)))
	}
	h.Cells = b.String()
	for d := hi; d >= lo; d /= 10 {
		h.Ticks = append(h.Ticks, FmtMs(d))
	}
	return h
}

// cell is the grid cell of a sample (row 0 at the top).
func (h Heatmap) cell(x correlate.Sample, span float64) (int, int, bool) {
	if !plotted(x) {
		return 0, 0, false
	}
	c := int(float64(x.Time.UnixMilli()-h.FromMs) / span * heatCols)
	if c < 0 || c >= heatCols {
		return 0, 0, false
	}
	f := math.Log(x.TotalMs/h.LoMs) / math.Log(h.HiMs/h.LoMs)
	r := heatRows - 1 - int(f*heatRows)
	return c, min(max(r, 0), heatRows-1), true
}

// plotted says whether a sample has a latency the chart can place:
// ingest refuses totals past correlate.MaxLatencyMs, but rows stored
// before it did must not stretch the scale to +Inf.
func plotted(x correlate.Sample) bool {
	return x.TotalMs > 0 && x.TotalMs <= correlate.MaxLatencyMs
}

func weight(x correlate.Sample) float64 {
	if x.SampleRate > 1 {
		return min(x.SampleRate, correlate.MaxSampleRate)
	}
	return 1
}

// Selection is a brushed box: a time range and a latency band.
type Selection struct {
	From, To   time.Time
	LoMs, HiMs float64
}

// ParseSelection reads "fromMs,toMs,loMs,hiMs".
func ParseSelection(v string) (Selection, error) {
	parts := strings.Split(v, ",")
	if len(parts) != 4 {
		return Selection{}, fmt.Errorf("want fromMs,toMs,loMs,hiMs, got %q", v)
	}
	var n [4]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return Selection{}, fmt.Errorf("want fromMs,toMs,loMs,hiMs, got %q", v)
		}
		n[i] = f
	}
	if n[1] <= n[0] || n[3] <= n[2] {
		return Selection{}, fmt.Errorf("want a non-empty box, got %q", v)
	}
	return Selection{From: time.UnixMilli(int64(n[0])).UTC(), To: time.UnixMilli(int64(n[1])).UTC(), LoMs: n[2], HiMs: n[3]}, nil
}

func (sel Selection) holds(x correlate.Sample) bool {
	return !x.Time.Before(sel.From) && x.Time.Before(sel.To) && x.TotalMs >= sel.LoMs && x.TotalMs <= sel.HiMs
}

// BubbleUp is the brushed requests against the rest of the window: per
// dimension value, its share of the selection and of the rest.
type BubbleUp struct {
	What       string // "412 requests 21:02–21:10 UTC, 800 ms – 2.4 s"
	Rows       []ConcRow
	Empty      string
	Selected   int
	Baseline   int
	Dimensions int
}

// bubbleDims are the dimensions compared.
var bubbleDims = []struct {
	name string
	get  func(correlate.Sample) string
}{
	{"model", func(x correlate.Sample) string { return x.Model }},
	{"version", func(x correlate.Sample) string { return x.Version }},
	{"tenant", func(x correlate.Sample) string { return x.Tenant }},
	{"replica", func(x correlate.Sample) string { return x.Replica }},
	{"node", func(x correlate.Sample) string { return x.Node }},
	{"entry", func(x correlate.Sample) string { return x.Entry }},
	{"status", func(x correlate.Sample) string { return x.Status }},
}

// BuildBubbleUp compares the selection with the other samples of the
// window: the values over-represented in the selection first (by the
// difference of shares), at most ten, each a filter link.
func BuildBubbleUp(samples []correlate.Sample, sel Selection, s State) BubbleUp {
	b := BubbleUp{What: FmtTime(sel.From, time.Time{}) + " – " + FmtTime(sel.To, sel.From) + ", " + FmtMs(sel.LoMs) + " – " + FmtMs(sel.HiMs)}
	type counts struct{ sel, base float64 }
	per := map[string]map[string]*counts{}
	var selW, baseW float64
	for _, x := range samples {
		w := weight(x)
		in := sel.holds(x)
		if in {
			selW += w
			b.Selected++
		} else {
			baseW += w
			b.Baseline++
		}
		for _, d := range bubbleDims {
			v := d.get(x)
			if v == "" {
				continue
			}
			m := per[d.name]
			if m == nil {
				m = map[string]*counts{}
				per[d.name] = m
			}
			c := m[v]
			if c == nil {
				c = &counts{}
				m[v] = c
			}
			if in {
				c.sel += w
			} else {
				c.base += w
			}
		}
	}
	if b.Selected == 0 {
		b.Empty = "No request samples in the selected box."
		return b
	}
	b.What = thousands(math.Round(selW)) + " requests, " + b.What
	type row struct {
		dim, val           string
		selPct, basePct, d float64
	}
	var rows []row
	for dim, m := range per {
		for v, c := range m {
			sp := 100 * c.sel / selW
			bp := 0.0
			if baseW > 0 {
				bp = 100 * c.base / baseW
			}
			if sp >= 5 && sp > bp {
				rows = append(rows, row{dim, v, sp, bp, sp - bp})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].d != rows[j].d {
			return rows[i].d > rows[j].d
		}
		return rows[i].dim+rows[i].val < rows[j].dim+rows[j].val
	})
	if len(rows) > 10 {
		rows = rows[:10]
	}
	for _, r := range rows {
		dims := map[string]string{r.dim: r.val}
		rr := "–"
		if r.basePct > 0 {
			rr = "×" + FmtNum(r.selPct/r.basePct)
		}
		b.Rows = append(b.Rows, ConcRow{Key: DimsKey(dims), Row: DimsKey(dims), Href: s.WithFilters(dims).URL(),
			Sel: FmtPct(r.selPct), Base: FmtPct(r.basePct), SelPct: math.Min(100, r.selPct), BasePct: math.Min(100, r.basePct), RiskRatio: rr})
	}
	if len(b.Rows) == 0 {
		b.Empty = "Nothing stands out: the selected requests look like the rest of the window."
	}
	return b
}

// FmtNumRaw renders a number for a data attribute.
func FmtNumRaw(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
