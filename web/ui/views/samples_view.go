package views

import (
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// SamplePageSize is how many samples one table page shows.
const SamplePageSize = 25

// SampleTable is the slow-sample table (or its baseline tab).
type SampleTable struct {
	Tabs    []Link
	Columns []SortColumn
	Rows    []SampleRow
	Total   string
	Range   string // "1–25 of 1,204"
	Prev    string
	Next    string
	Empty   string
	HowTo   bool // the window has no samples at all: show how to send them
	Clear   string
	Note    string // what "slow" means here
	// Pick says how the slow requests were picked, PickHref/PickText the
	// other way (spread over the window and replicas, or slowest only).
	Pick, PickHref, PickText string
	// Tokens: some request of the page carries token counts (an LLM's):
	// the table shows them, prompt → generated.
	Tokens bool
}

// SortColumn is a sortable header: clicking sorts by it, or flips it.
type SortColumn struct {
	Label, Href, Sort string // Sort: "descending", "ascending" or ""
	Num               bool
}

// SampleRow is one request.
type SampleRow struct {
	ID, Time, Model, Version, Tenant, Replica, Node, Batch, Status, Total string
	Tokens                                                                string // "812 → 64"; "" without counts
	Segments                                                              []Segment
	DetailHref                                                            string
}

// Segment is one stage's share of a row's bar.
type Segment struct {
	Class string
	Width float64
	Title string
}

// SampleTableInput is what BuildSampleTable needs.
type SampleTableInput struct {
	Page        store.SamplePage
	State       State
	WindowTotal int // samples stored in the whole window (0: none sent)
	SlowMs      map[string]float64
	// DefaultSlowMs is the threshold of models SlowMs does not list; with
	// neither (no analysis yet) every sample counts as slow.
	DefaultSlowMs float64
	DetailBase    string    // e.g. /incidents/5/samples
	Ref           time.Time // the window's start
	To            time.Time // the window's end (zero: not said)
}

// BuildSampleTable lays out one page of samples.
func BuildSampleTable(in SampleTableInput) SampleTable {
	s := in.State
	t := SampleTable{}
	for _, tab := range []struct{ id, label string }{{"", "Slow requests (selection)"}, {"baseline", "Other requests (baseline)"}} {
		ts := s
		ts.Tab, ts.Page = tab.id, 0
		t.Tabs = append(t.Tabs, Link{Text: tab.label, Href: ts.URL(), Current: s.Tab == tab.id})
	}
	if len(in.SlowMs) > 0 {
		var parts []string
		for _, m := range sortedKeys(in.SlowMs) {
			parts = append(parts, m+" ≥ "+FmtMs(in.SlowMs[m]))
		}
		t.Note = "Slow = total at or over the model's threshold: " + strings.Join(parts, ", ") + "."
	}
	noThreshold := len(in.SlowMs) == 0 && !(in.DefaultSlowMs > 0)
	switch {
	case len(in.SlowMs) == 0 && in.DefaultSlowMs > 0:
		t.Note = "Slow = total at or over " + FmtMs(in.DefaultSlowMs) + " (the P99 before the onset)."
	case noThreshold:
		t.Note = "No slow threshold yet (the analysis is not ready): every sample is listed, slow or not."
	}
	cols := []struct{ id, label string }{{"time", "Time"}, {"total", "Total"}}
	for _, st := range correlate.StageNames() {
		cols = append(cols, struct{ id, label string }{st, strings.ReplaceAll(st, "_", " ")})
	}
	cur := s.Sort
	if cur == "" {
		cur = "total"
	}
	for _, c := range cols {
		cs := s
		cs.Page = 0
		sc := SortColumn{Label: c.label, Num: c.id != "time"}
		if c.id == cur {
			cs.Asc = !s.Asc
			sc.Sort = "descending"
			if s.Asc {
				sc.Sort = "ascending"
			}
		} else {
			cs.Asc = c.id == "time"
		}
		cs.Sort = c.id
		if c.id == "total" {
			cs.Sort = ""
		}
		sc.Href = cs.URL()
		t.Columns = append(t.Columns, sc)
	}
	if s.DefaultOrder() {
		ps := s
		ps.Page, ps.Slowest = 0, !s.Slowest
		t.PickHref = ps.URL()
		if s.Slowest {
			t.Pick, t.PickText = "The slowest requests first.", "Spread them over the window and the replicas"
		} else {
			t.Pick = "The slowest request of each replica in each twentieth of the window first, then the second slowest, and so on (so one burst does not fill the page); by total."
			t.PickText = "Show the slowest only"
		}
	}
	total := in.Page.Total
	t.Total = thousands(float64(total))
	if total == 0 {
		switch {
		case in.WindowTotal == 0:
			t.HowTo = true
			t.Empty = "No samples for this window."
		case s.HasFilters():
			t.Empty = "No samples match these filters in this window."
			t.Clear = s.WithFilters(nil).URL()
		case s.Tab == "baseline" && noThreshold:
			t.Empty = "No slow threshold yet, so no sample is set apart as baseline."
		case s.Tab == "baseline":
			t.Empty = "Every sample in this window is slow."
		default:
			t.Empty = "No slow samples in this window."
		}
		return t
	}
	page := max(s.Page, 1)
	lo := (page-1)*SamplePageSize + 1
	hi := lo + len(in.Page.Samples) - 1
	noun := " slow samples"
	if noThreshold {
		noun = " samples"
	} else if s.Tab == "baseline" {
		noun = " other samples"
	}
	// Which samples: the table's window is the spike's unless zoomed,
	// another than the heatmap's or the analysis'.
	when := " from the onset ("
	if !s.From.IsZero() || !s.To.IsZero() {
		when = " in this view ("
	}
	if !in.To.After(in.Ref) {
		when = ""
	}
	t.Range = thousands(float64(lo)) + "–" + thousands(float64(hi)) + " of " + t.Total + noun + " " + samplesOf(s)
	if when != "" {
		t.Range += when + FmtSpan(in.Ref, in.To) + ")"
	}
	if page > 1 {
		ps := s
		ps.Page = page - 1
		t.Prev = ps.URL()
	}
	if hi < total {
		ns := s
		ns.Page = page + 1
		t.Next = ns.URL()
	}
	scale := 0.0
	for _, x := range in.Page.Samples {
		scale = math.Max(scale, x.TotalMs)
	}
	for _, x := range in.Page.Samples {
		r := sampleRow(x, scale, in.DetailBase, in.Ref, s.Live)
		t.Tokens = t.Tokens || r.Tokens != ""
		t.Rows = append(t.Rows, r)
	}
	return t
}

// live: the page reads live data past a snapshot; so does the detail.
func sampleRow(x correlate.Sample, scale float64, detailBase string, ref time.Time, live bool) SampleRow {
	r := SampleRow{ID: x.RequestID, Time: FmtTime(x.Time, ref), Model: x.Model, Version: x.Version, Tenant: x.Tenant,
		Replica: x.Replica, Node: x.Node, Status: x.Status, Total: FmtMs(x.TotalMs),
		DetailHref: detailBase + "/" + url.PathEscape(x.RequestID) + "?t=" + strconv.FormatInt(x.Time.UnixMilli(), 10)}
	if live {
		r.DetailHref += "&live=1"
	}
	if x.BatchSize > 0 {
		r.Batch = strconv.Itoa(x.BatchSize)
	}
	r.Tokens = tokensText(x)
	if scale <= 0 {
		scale = 1
	}
	for i, v := range x.StagesMs {
		if math.IsNaN(v) || v <= 0 {
			continue
		}
		name := correlate.Stage(i).String()
		r.Segments = append(r.Segments, Segment{Class: "st" + strconv.Itoa(i), Width: pct(v / scale), Title: name + " " + FmtMs(v)})
	}
	return r
}

// tokensText is a request's prompt and generated tokens, "812 → 64" ("?"
// for the one not known), "" when neither is.
func tokensText(x correlate.Sample) string {
	if x.InputTokens <= 0 && x.OutputTokens <= 0 {
		return ""
	}
	n := func(v int) string {
		if v <= 0 {
			return "?"
		}
		return thousands(float64(v))
	}
	return n(x.InputTokens) + " → " + n(x.OutputTokens)
}

// SampleDetail is one request next to what was typical.
type SampleDetail struct {
	ID, Time, Total string
	Dims            []KV
	Stages          []DetailStage
	Close           string
}

// DetailStage compares one stage of the request with the typical time of
// slow requests before and during the spike.
type DetailStage struct {
	Stage, Ms, Before, During string
	Pct                       float64
	Class                     string
	Over                      bool // notably over the typical "during" time
}

// BuildSampleDetail builds the detail view of one sample.
//
// The typical stage times come from the analysis (nil: none) only where
// they are the request's own model's: pooled over several models, or of
// another, they would flag a request against a different workload.
func BuildSampleDetail(x correlate.Sample, an *correlate.Analysis) SampleDetail {
	var stages []correlate.StageShare
	if an != nil {
		pooled := an.StageModels
		if pooled == nil { // stored before stage_models: its affected models
			pooled = an.Scope.Models
		}
		if len(pooled) == 1 && pooled[0] == x.Model {
			stages = an.Stages
		}
	}
	d := SampleDetail{ID: x.RequestID, Time: FmtTime(x.Time, time.Time{}), Total: FmtMs(x.TotalMs)}
	for _, kv := range []KV{{"model", x.Model}, {"version", x.Version}, {"tenant", x.Tenant}, {"replica", x.Replica},
		{"node", x.Node}, {"entry", x.Entry}, {"status", x.Status}} {
		if kv.V != "" {
			d.Dims = append(d.Dims, kv)
		}
	}
	if x.BatchSize > 0 {
		d.Dims = append(d.Dims, KV{"batch size", strconv.Itoa(x.BatchSize)})
	}
	if tk := tokensText(x); tk != "" {
		d.Dims = append(d.Dims, KV{"tokens (prompt → generated)", tk})
	}
	if x.Dependency != "" {
		d.Dims = append(d.Dims, KV{"dependency", x.Dependency})
	}
	if x.SampleRate > 1 {
		d.Dims = append(d.Dims, KV{"sampled", "1 in " + FmtNum(x.SampleRate)})
	}
	typ := map[string]correlate.StageShare{}
	for _, s := range stages {
		typ[s.Stage] = s
	}
	for i, v := range x.StagesMs {
		name := correlate.Stage(i).String()
		ds := DetailStage{Stage: name, Ms: FmtMs(v), Class: "st" + strconv.Itoa(i)}
		if math.IsNaN(v) {
			ds.Ms = "not reported"
		} else if x.TotalMs > 0 {
			ds.Pct = pct(v / x.TotalMs)
		}
		if s, ok := typ[name]; ok {
			ds.Before, ds.During = FmtMs(s.BeforeMs), FmtMs(s.DuringMs)
			ds.Over = !math.IsNaN(v) && s.DuringMs > 0 && v > 1.5*s.DuringMs && v-s.DuringMs > 1
		}
		d.Stages = append(d.Stages, ds)
	}
	return d
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
