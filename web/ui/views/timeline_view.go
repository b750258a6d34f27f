package views

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/waterline-dev/waterline/correlate"
)

// Timeline is one time axis with lanes: grouped events, then curves drawn
// as SVG paths on a 0..1000 × 0..Height box (stretched to the page width),
// with the onset and the spike windows marked across all lanes.
type Timeline struct {
	FromMs, ToMs int64  // the axis, for the crosshair and drag-to-zoom script
	StepMs       int64  // the curves' step: the crosshair reads values on it
	URL          string // the current view's URL; zooming sets from/to on it
	Target       string // CSS selector of the region a zoom reloads
	Window       string // "07:10–08:40 UTC · 1 h 30 min · step 30 s"
	Ticks        []Tick
	Bands        []Band // spike windows
	// SpikesText lists the drawn spike windows in words, for those who
	// cannot see the bands (screen readers); BandsLeftOut counts the
	// earlier windows not drawn.
	SpikesText   string
	BandsLeftOut int
	OnsetPct     float64
	HasOnset     bool
	// OnsetGap: the latency curve has no data before the onset back to
	// OnsetGapPct, so the rise is drawn as that whole gap, not as a line
	// at its first point after it (a precision the data does not have).
	OnsetGap      bool
	OnsetGapPct   float64
	OnsetGapTitle string
	EventLanes    []EventLane
	EventCount    int
	Lanes         []Lane
	Nav           []Link // earlier, zoom in, zoom out, later, reset
	Note          string // e.g. why a tenant filter does not narrow the curves
}

// Tick is an axis label at a position in percent.
type Tick struct {
	Pct   float64
	Label string
}

// Band is a highlighted time range in percent.
type Band struct {
	LeftPct, WidthPct float64
	Title             string
}

// EventLane is one row of grouped events (changes, scaling, nodes, alerts).
type EventLane struct {
	Name  string
	Marks []EventMark
	Total int
}

// EventMark is the events of one kind group in one time bucket: a single
// event, or a count when several fall together ("+N more" in its title).
type EventMark struct {
	Pct   float64
	Text  string // a glyph for one event, the count for several
	Class string // k-change, k-scale, k-node, k-alert, k-custom
	Title string
	Href  string // zooms into the bucket
}

// Lane is one curve chart.
type Lane struct {
	ID, Name string
	Per      string // "per model", "per node", "per replica", "fleet": what one line is
	YMax     string // "scale 0–1,250 ms"
	YMaxV    string // the scale's top as a number, for the crosshair's values
	Unit     string
	Height   int
	Chip     *Link // a tenant driving the traffic (on the traffic lane)
	Legend   []LegendItem
	Paths    []SVGPath
	More     int    // series not drawn
	Empty    string // shown instead of the chart when there is nothing to draw
	Grid     []GridLine
}

// GridLine is a horizontal line across a lane at a round value.
type GridLine struct {
	TopPct float64 // from the lane's top
	Label  string  // "250 ms"
}

// LegendItem names one drawn series.
type LegendItem struct {
	Class, Label string
}

// SVGPath is one series: its colour class, dash class and path data.
type SVGPath struct {
	Class string // "s0".."s5" per model, "n0".."n5" per node, "d1"/"d2" dashes, or "area st3" for stacked areas
	D     string
	Title string // the series' name: the crosshair lists it with its value
	// Clipped: the series runs above the lane's scale, which was fitted
	// to the incident's model; the crosshair says "above".
	Clipped bool
	// Values are the series' values (in the lane's unit, three
	// significant digits) on the step grid, from step number V0 (time /
	// step) on, "" where there is none: the crosshair reads them, not
	// the drawn pixels (a pixel of a 10 s scale is 94 ms).
	Values string
	V0     int64
}

// TimelineInput is what BuildTimeline draws.
type TimelineInput struct {
	From, To time.Time
	Step     time.Duration
	Curves   []correlate.Curve
	Events   []correlate.Event
	Onset    *time.Time
	// OnsetGapFrom is where the latency data stopped before the onset
	// (Analysis.OnsetGapFrom): the rise happened somewhere in between.
	OnsetGapFrom *time.Time
	Spikes       []correlate.Spike
	Filter       correlate.Scope // the view's dimension filters
	// StageModel is the model whose stages are stacked when no filter
	// names one (the incident's model).
	StageModel string
	State      State  // for zoom and event links
	Target     string // region zoom reloads, e.g. "#filtered"
	// Tenant, when one tenant drives the traffic: a chip on the
	// traffic lane that filters the page to it.
	Tenant *Link
	// models maps a model to its colour class, the same on every lane.
	models map[string]string
}

// laneSpec says which roles a lane draws and how.
type laneSpec struct {
	id, name, unit string
	roles          []correlate.Role
	scale          float64 // multiply values (fractions → percent, bytes → MB)
	height         int
	stacked        bool
	// prefix names a lane of several measures before the measures drawn
	// ("Latency P99 / P95").
	prefix string
	// optional: a lane shown only where its curves are (LLM servers' token
	// counts), not as an empty row on every other fleet's page.
	optional bool
}

var laneSpecs = []laneSpec{
	// The mean before the P50: where it stands in for a quantile it is a
	// model's only line (see primary in buildLane).
	{id: "latency", name: "Latency P99 / P95 / P50", prefix: "Latency", unit: "ms", roles: []correlate.Role{correlate.RoleLatencyP99, correlate.RoleLatencyP95, correlate.RoleLatencyMean, correlate.RoleLatencyP50}, scale: 1, height: 110},
	{id: "qps", name: "Requests", unit: "req/s", roles: []correlate.Role{correlate.RoleQPS}, scale: 1, height: 60},
	{id: "errors", name: "Errors", unit: "%", roles: []correlate.Role{correlate.RoleErrorRate}, scale: 100, height: 45},
	{id: "queue", name: "Queue", unit: "req", roles: []correlate.Role{correlate.RoleQueue}, scale: 1, height: 55},
	{id: "batch", name: "Batch size", unit: "req", roles: []correlate.Role{correlate.RoleBatchSize}, scale: 1, height: 45},
	// An LLM's latency follows its requests' length.
	{id: "tokens", name: "Tokens per request", prefix: "Tokens per request:", unit: "tokens", roles: []correlate.Role{correlate.RoleOutputTokens, correlate.RolePromptTokens}, scale: 1, height: 45, optional: true},
	{id: "ttft", name: "Time to first token", unit: "ms", roles: []correlate.Role{correlate.RoleTTFT}, scale: 1, height: 45, optional: true},
	{id: "tpot", name: "Time per generated token", unit: "ms", roles: []correlate.Role{correlate.RoleTPOT}, scale: 1, height: 45, optional: true},
	{id: "replicas", name: "Replicas desired", unit: "replicas", roles: []correlate.Role{correlate.RoleReplicas}, scale: 1, height: 45},
	{id: "stages", name: "Time per stage (stacked)", unit: "ms", roles: []correlate.Role{correlate.RoleStageTime}, scale: 1, height: 80, stacked: true},
	{id: "gpu", name: "GPU utilisation", unit: "%", roles: []correlate.Role{correlate.RoleGPUUtil}, scale: 1, height: 55},
	{id: "gpumem", name: "GPU memory used", unit: "GiB", roles: []correlate.Role{correlate.RoleGPUMemUsed}, scale: 1.0 / 1024, height: 45},
	{id: "cpu", name: "Node CPU", unit: "%", roles: []correlate.Role{correlate.RoleNodeCPU}, scale: 100, height: 45},
	{id: "mem", name: "Node memory", unit: "%", roles: []correlate.Role{correlate.RoleNodeMemory}, scale: 100, height: 45},
	{id: "net", name: "Node network in", unit: "MB/s", roles: []correlate.Role{correlate.RoleNodeNetwork}, scale: 1e-6, height: 45},
}

// maxSeriesPerLane bounds lines per lane: beyond a handful a chart is
// unreadable and the page heavy; the rest are counted ("+N more").
const maxSeriesPerLane = 6

// eventBuckets is how many columns dense events are grouped into.
const eventBuckets = 96

// BuildTimeline lays out the lanes of in.
func BuildTimeline(in TimelineInput) Timeline {
	span := in.To.Sub(in.From)
	if span <= 0 {
		span = time.Minute
		in.To = in.From.Add(span)
	}
	tl := Timeline{FromMs: in.From.UnixMilli(), ToMs: in.To.UnixMilli(), StepMs: in.Step.Milliseconds(), URL: in.State.URL(), Target: in.Target}
	x := func(t time.Time) float64 { return 100 * float64(t.Sub(in.From)) / float64(span) }
	tl.Window = FmtTime(in.From, time.Time{}) + " – " + FmtTime(in.To, in.From) + " · " + FmtDuration(span)
	if in.Step > 0 {
		tl.Window += " · step " + FmtDuration(in.Step)
	}
	tl.Ticks = ticks(in.From, in.To)
	if in.Onset != nil && !in.Onset.Before(in.From) && in.Onset.Before(in.To) {
		tl.HasOnset, tl.OnsetPct = true, x(*in.Onset)
		if g := in.OnsetGapFrom; g != nil && g.Before(*in.Onset) {
			from := *g
			if from.Before(in.From) {
				from = in.From
			}
			tl.OnsetGap, tl.OnsetGapPct = true, x(from)
			tl.OnsetGapTitle = "Latency rose in this gap: no latency data from " + FmtTime(*g, time.Time{}) + " to " + FmtTime(*in.Onset, *g)
		}
	}
	tl.Bands, tl.BandsLeftOut, tl.SpikesText = spikeBands(in.Spikes, in.From, in.To, x)
	tl.EventLanes, tl.EventCount = eventLanes(in.Events, in.From, in.To, in.State)
	in.models = modelColours(in.Curves, in.StageModel)
	for _, spec := range laneSpecs {
		l := buildLane(spec, in)
		if spec.optional && l.Empty != "" {
			continue
		}
		if spec.id == "qps" && in.Tenant != nil {
			l.Chip = in.Tenant
		}
		tl.Lanes = append(tl.Lanes, l)
	}
	tl.Nav = timelineNav(in.State, in.From, in.To, in.Onset)
	if in.Filter.Tenant != "" {
		tl.Note = "Curves seldom have a tenant dimension: the tenant filter narrows the events and samples, and these lanes only to curves of no tenant or of this one."
	}
	return tl
}

// timelineNav offers keyboard-reachable pan and zoom links. Zooming in
// closes in on the onset when the view holds it: the middle of a window
// is rarely where anything happened.
func timelineNav(s State, from, to time.Time, onset *time.Time) []Link {
	span := to.Sub(from)
	mid := from.Add(span / 2)
	focus := mid
	if onset != nil && onset.After(from) && onset.Before(to) {
		focus = *onset
	}
	return []Link{
		{Text: "← earlier", Href: s.WithWindow(from.Add(-span/2), to.Add(-span/2)).URL()},
		{Text: "zoom in", Href: s.WithWindow(focus.Add(-span/4), focus.Add(span/4)).URL()},
		{Text: "zoom out", Href: s.WithWindow(mid.Add(-span), mid.Add(span)).URL()},
		{Text: "later →", Href: s.WithWindow(from.Add(span/2), to.Add(span/2)).URL()},
		{Text: "reset window", Href: s.WithoutWindow().URL()},
	}
}

var tickSteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}

// ticks places at most eight labels on round times.
func ticks(from, to time.Time) []Tick {
	span := to.Sub(from)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 8 {
			step = s
			break
		}
	}
	layout := "15:04"
	if span > 36*time.Hour {
		layout = "Jan 2 15:04"
	}
	var out []Tick
	for t := from.Truncate(step); t.Before(to); t = t.Add(step) {
		if t.Before(from) {
			continue
		}
		p := 100 * float64(t.Sub(from)) / float64(span)
		if p > 97 {
			break
		}
		out = append(out, Tick{Pct: p, Label: t.UTC().Format(layout)})
	}
	return out
}

// maxBands is the most spike windows a timeline draws.
const maxBands = 12

// spikeBands marks spike windows, merging overlaps (per-replica spikes
// often coincide) and keeping the newest twelve (the live edge is what a
// reader came for), and says them in words, with how many were left out.
func spikeBands(spikes []correlate.Spike, from, to time.Time, x func(time.Time) float64) ([]Band, int, string) {
	type iv struct{ a, b time.Time }
	var ivs []iv
	for _, sp := range spikes {
		a, b := sp.Start, sp.End
		if b.Before(a) {
			b = a
		}
		if b.Before(from) || !a.Before(to) {
			continue
		}
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		ivs = append(ivs, iv{a, b})
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].a.Before(ivs[j].a) })
	var merged []iv
	for _, v := range ivs {
		if n := len(merged); n > 0 && !v.a.After(merged[n-1].b) {
			if v.b.After(merged[n-1].b) {
				merged[n-1].b = v.b
			}
			continue
		}
		merged = append(merged, v)
	}
	left := max(len(merged)-maxBands, 0)
	var out []Band
	var words []string
	for _, v := range merged[left:] {
		l, r := x(v.a), x(v.b)
		span := v.a.UTC().Format("15:04:05") + "–" + v.b.UTC().Format("15:04:05")
		out = append(out, Band{LeftPct: l, WidthPct: math.Max(r-l, 0.3), Title: "spike " + span + " UTC"})
		words = append(words, span)
	}
	if len(out) == 0 {
		return nil, 0, ""
	}
	return out, left, "Spike windows (UTC): " + strings.Join(words, ", ") + "."
}

// eventGroup is a row of the event lanes.
type eventGroup struct {
	name, class string
	kinds       []correlate.EventKind
}

var eventGroups = []eventGroup{
	{"Changes", "k-change", []correlate.EventKind{correlate.KindDeploy, correlate.KindRollback, correlate.KindConfigChange, correlate.KindRouteChange}},
	{"Scaling", "k-scale", []correlate.EventKind{correlate.KindScaleUp, correlate.KindScaleDown, correlate.KindReplicaStart, correlate.KindReplicaRestart}},
	{"Nodes", "k-node", []correlate.EventKind{correlate.KindNodeFault, correlate.KindNodeRecovered}},
	{"Alerts", "k-alert", []correlate.EventKind{correlate.KindAlert, correlate.KindCustom, correlate.KindAnnotation}},
}

var kindGlyph = map[correlate.EventKind]string{
	correlate.KindDeploy: "D", correlate.KindRollback: "R", correlate.KindConfigChange: "C", correlate.KindRouteChange: "→",
	correlate.KindScaleUp: "↑", correlate.KindScaleDown: "↓", correlate.KindReplicaStart: "S", correlate.KindReplicaRestart: "↻",
	correlate.KindNodeFault: "✕", correlate.KindNodeRecovered: "✓", correlate.KindAlert: "!", correlate.KindCustom: "•",
	correlate.KindAnnotation: "✎",
}

// EventLabel describes one event in a line: kind, scope, summary.
func EventLabel(e correlate.Event) string {
	s := string(e.Kind)
	if sc := e.Scope.String(); sc != "" {
		s += " " + sc
	}
	if e.Summary != "" {
		s += ": " + e.Summary
	}
	return s
}

// eventLanes groups events into a fixed number of time buckets per kind
// group, so 2,000 events cost at most a few hundred marks; a bucket's mark
// shows the count and names the first events, "+N more" for the rest, and
// links to a zoom on that bucket.
func eventLanes(events []correlate.Event, from, to time.Time, s State) ([]EventLane, int) {
	span := to.Sub(from)
	bw := span / eventBuckets
	if bw <= 0 {
		bw = time.Second
	}
	total := 0
	var lanes []EventLane
	for _, g := range eventGroups {
		buckets := map[int][]correlate.Event{}
		lane := EventLane{Name: g.name}
		for _, e := range events {
			if e.Time.Before(from) || !e.Time.Before(to) || !containsKind(g.kinds, e.Kind) {
				continue
			}
			b := int(e.Time.Sub(from) / bw)
			buckets[b] = append(buckets[b], e)
			lane.Total++
		}
		total += lane.Total
		keys := make([]int, 0, len(buckets))
		for b := range buckets {
			keys = append(keys, b)
		}
		sort.Ints(keys)
		for _, b := range keys {
			evs := buckets[b]
			start := from.Add(time.Duration(b) * bw)
			m := EventMark{Pct: 100 * (float64(b) + 0.5) / eventBuckets, Class: g.class}
			if len(evs) == 1 {
				m.Text = kindGlyph[evs[0].Kind]
				m.Title = evs[0].Time.UTC().Format("15:04:05") + " " + EventLabel(evs[0])
			} else {
				m.Text = strconv.Itoa(len(evs))
				lines := []string{strconv.Itoa(len(evs)) + " events " + start.UTC().Format("15:04:05") + "–" + start.Add(bw).UTC().Format("15:04:05") + " UTC"}
				for i, e := range evs {
					if i == 3 {
						lines = append(lines, "+"+strconv.Itoa(len(evs)-3)+" more")
						break
					}
					lines = append(lines, e.Time.UTC().Format("15:04:05")+" "+EventLabel(e))
				}
				m.Title = strings.Join(lines, "\n")
			}
			pad := max(bw*2, 2*time.Minute)
			m.Href = s.WithWindow(start.Add(-pad), start.Add(bw+pad)).URL()
			lane.Marks = append(lane.Marks, m)
		}
		lanes = append(lanes, lane)
	}
	return lanes, total
}

func containsKind(ks []correlate.EventKind, k correlate.EventKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// levelOrder is which curve level a lane prefers for a filter: the finest
// the filter names, then coarser context.
func levelOrder(f correlate.Scope) []correlate.Level {
	switch {
	case f.Replica != "":
		return []correlate.Level{correlate.LevelReplica, correlate.LevelNode, correlate.LevelVersion, correlate.LevelModel, correlate.LevelFleet}
	case f.Node != "":
		return []correlate.Level{correlate.LevelNode, correlate.LevelReplica, correlate.LevelVersion, correlate.LevelModel, correlate.LevelFleet}
	case f.Version != "":
		return []correlate.Level{correlate.LevelVersion, correlate.LevelModel, correlate.LevelNode, correlate.LevelReplica, correlate.LevelFleet}
	}
	return []correlate.Level{correlate.LevelModel, correlate.LevelFleet, correlate.LevelNode, correlate.LevelVersion, correlate.LevelReplica}
}

// entityName is how a lane legend names a curve's scope.
func entityName(c correlate.Curve) string {
	switch c.Level {
	case correlate.LevelReplica:
		return c.Scope.Replica
	case correlate.LevelNode:
		return c.Scope.Node
	case correlate.LevelVersion:
		return c.Scope.Model + "@" + c.Scope.Version
	case correlate.LevelFleet:
		return "fleet"
	}
	if c.Scope.Model != "" {
		return c.Scope.Model
	}
	return c.Scope.String()
}

// modelPalette is how many colours models get; beyond it they repeat.
const modelPalette = 6

// modelColours gives every model in the window one colour class for all
// lanes: the incident's model first, the others by name.
func modelColours(curves []correlate.Curve, first string) map[string]string {
	seen := map[string]bool{}
	var names []string
	for _, c := range curves {
		if m := c.Scope.Model; m != "" && !seen[m] {
			seen[m] = true
			if m != first {
				names = append(names, m)
			}
		}
	}
	sort.Strings(names)
	if first != "" {
		names = append([]string{first}, names...)
	}
	out := make(map[string]string, len(names))
	for i, m := range names {
		out[m] = "s" + strconv.Itoa(i%modelPalette)
	}
	return out
}

// perWords says what one line of a lane is.
var perWords = map[correlate.Level]string{correlate.LevelModel: "per model", correlate.LevelVersion: "per model version",
	correlate.LevelReplica: "per replica", correlate.LevelNode: "per node", correlate.LevelFleet: "whole fleet"}

var dashOf = map[correlate.Role]string{correlate.RoleLatencyP95: " d1", correlate.RoleLatencyP50: " d2", correlate.RoleLatencyMean: " d3", correlate.RolePromptTokens: " d1"}

var roleShort = map[correlate.Role]string{correlate.RoleLatencyP99: "P99", correlate.RoleLatencyP95: "P95", correlate.RoleLatencyP50: "P50", correlate.RoleLatencyMean: "mean",
	correlate.RoleOutputTokens: "generated", correlate.RolePromptTokens: "prompt"}

func buildLane(spec laneSpec, in TimelineInput) Lane {
	lane := Lane{ID: spec.id, Name: spec.name, Height: spec.height}
	byLevel := map[correlate.Level][]correlate.Curve{}
	for _, c := range in.Curves {
		if containsRole(spec.roles, c.Role) && len(c.Points) > 0 {
			byLevel[c.Level] = append(byLevel[c.Level], c)
		}
	}
	var cands []correlate.Curve
	for _, l := range levelOrder(in.Filter) {
		if len(byLevel[l]) > 0 {
			cands = byLevel[l]
			break
		}
	}
	per := ""
	if spec.id == "gpu" && in.StageModel != "" && in.Filter.Replica == "" && in.Filter.Node == "" {
		// The incident's model's own replicas, as the evidence reads
		// them, rather than each node's average over all its GPUs.
		var own []correlate.Curve
		for _, c := range byLevel[correlate.LevelReplica] {
			if c.Scope.Model == in.StageModel {
				own = append(own, c)
			}
		}
		if len(own) > 0 {
			cands, per = own, "per replica of "+in.StageModel
		}
	}
	if len(cands) == 0 {
		lane.Empty = "no " + strings.ToLower(spec.name) + " curves in this window"
		return lane
	}
	lane.Per, lane.Unit = perWords[cands[0].Level], spec.unit
	if per != "" {
		lane.Per = per
	}
	if spec.stacked {
		return stackedLane(spec, lane, cands, in)
	}
	// Group by entity; rank entities by the peak of their first role.
	type entity struct {
		name   string
		model  string
		curves map[correlate.Role]correlate.Curve
		peak   float64
	}
	ents := map[string]*entity{}
	var order []string
	for _, c := range cands {
		n := entityName(c)
		e := ents[n]
		if e == nil {
			e = &entity{name: n, model: c.Scope.Model, curves: map[correlate.Role]correlate.Curve{}, peak: math.Inf(-1)}
			ents[n] = e
			order = append(order, n)
		}
		e.curves[c.Role] = c
	}
	for _, e := range ents {
		for _, r := range spec.roles {
			if c, ok := e.curves[r]; ok {
				e.peak = peak(c.Points)
				break
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return ents[order[i]].peak > ents[order[j]].peak })
	if len(order) > maxSeriesPerLane {
		lane.More = len(order) - maxSeriesPerLane
		order = order[:maxSeriesPerLane]
	}
	ymax := 0.0
	for _, n := range order {
		for _, c := range ents[n].curves {
			ymax = math.Max(ymax, peak(c.Points)*spec.scale)
		}
	}
	ymax = niceCeil(ymax)
	lane.YMax = "scale 0–" + withUnit(ymax, spec.unit) + ", " + lane.Per
	// Latency: when another model would flatten the incident's own into
	// a few pixels (a doubling from 122 to 250 ms under a line at 600),
	// the scale fits the incident's model and the higher lines run off
	// the top. Its change is what the page is about.
	if focus := in.StageModel; spec.id == "latency" && in.Filter.Model == "" && focus != "" {
		fpeak := 0.0
		for _, n := range order {
			if ents[n].model == focus {
				for _, c := range ents[n].curves {
					fpeak = math.Max(fpeak, peak(c.Points)*spec.scale)
				}
			}
		}
		if fit := fineCeil(fpeak * 1.15); fpeak > 0 && fit < 0.6*ymax {
			ymax = fit
			above := 0
			for _, n := range order {
				if ents[n].peak*spec.scale > ymax {
					above++
				}
			}
			runs := strconv.Itoa(above) + " lines run"
			if above == 1 {
				runs = "1 line runs"
			}
			lane.YMax = "scale 0–" + withUnit(ymax, spec.unit) + ", fitted to " + focus + "; " + runs + " above it"
			// The incident's model first, in the legend and the drawing.
			sort.SliceStable(order, func(i, j int) bool { return ents[order[i]].model == focus && ents[order[j]].model != focus })
		}
	}
	lane.YMaxV = strconv.FormatFloat(ymax, 'g', 6, 64)
	lane.Grid = gridLines(ymax, spec.unit, spec.height)
	nodeIdx := 0
	drawn := map[correlate.Role]bool{}
	for i, n := range order {
		// One colour per model on every lane; what has no model (a node,
		// the fleet) is drawn in shades of grey.
		cls, ok := in.models[ents[n].model]
		if !ok || ents[n].model == "" {
			cls = "n" + strconv.Itoa(nodeIdx%6)
			nodeIdx++
		}
		label := n
		if ents[n].model != "" && n != ents[n].model {
			label = n + " (" + ents[n].model + ")"
			if strings.HasPrefix(n, ents[n].model) {
				label = n
			}
		}
		lane.Legend = append(lane.Legend, LegendItem{Class: cls, Label: label})
		// An entity's primary line is its first measure in the lane's
		// order: a P99, else a P95, else the mean standing in.
		primary := correlate.Role("")
		for _, r := range spec.roles {
			if _, ok := ents[n].curves[r]; ok {
				primary = r
				break
			}
		}
		for _, r := range spec.roles {
			c, ok := ents[n].curves[r]
			if !ok {
				continue
			}
			// With many entities only the top one gets its other
			// measures: eighteen lines are unreadable and heavy.
			if r != primary && i > 0 && len(order) > 2 {
				continue
			}
			drawn[r] = true
			title := n
			if s := roleShort[r]; s != "" {
				title += " " + s
			}
			// The crosshair lists a lane's first tipSeries series (the rest
			// as "+N more"): only they carry their values.
			var vals string
			var v0 int64
			if len(lane.Paths) < tipSeries {
				vals, v0 = stepValues(c.Points, in.Step, spec.scale)
			}
			lane.Paths = append(lane.Paths, SVGPath{Class: cls + dashOf[r], Title: title,
				D: linePath(c.Points, in, spec.scale, ymax, spec.height), Clipped: peak(c.Points)*spec.scale > ymax, Values: vals, V0: v0})
		}
	}
	if len(spec.roles) > 1 {
		// The measures drawn, in the legend and the lane's name.
		var names []string
		for _, r := range spec.roles {
			if drawn[r] {
				lane.Legend = append(lane.Legend, LegendItem{Class: "k" + dashOf[r], Label: roleShort[r]})
				names = append(names, roleShort[r])
			}
		}
		if len(names) > 0 {
			lane.Name = spec.prefix + " " + strings.Join(names, " / ")
		}
	}
	return lane
}

// stackedLane stacks one entity's stage curves in request order.
func stackedLane(spec laneSpec, lane Lane, cands []correlate.Curve, in TimelineInput) Lane {
	want := in.Filter.Model
	if want == "" {
		want = in.StageModel
	}
	byEnt := map[string][]correlate.Curve{}
	var names []string
	for _, c := range cands {
		n := entityName(c)
		if _, ok := byEnt[n]; !ok {
			names = append(names, n)
		}
		byEnt[n] = append(byEnt[n], c)
	}
	pick := ""
	for _, n := range names {
		if byEnt[n][0].Scope.Model == want && want != "" {
			pick = n
			break
		}
	}
	if pick == "" {
		best := math.Inf(-1)
		for _, n := range names {
			tot := 0.0
			for _, c := range byEnt[n] {
				tot += peak(c.Points)
			}
			if tot > best {
				best, pick = tot, n
			}
		}
	}
	lane.Name = spec.name + " · " + pick
	lane.More = len(names) - 1
	curves := byEnt[pick]
	sort.SliceStable(curves, func(i, j int) bool { return stageIndex(curves[i].Stage) < stageIndex(curves[j].Stage) })
	// Cumulative sums on the shared bucket grid.
	var ts []int64
	seen := map[int64]bool{}
	for _, c := range curves {
		for _, p := range c.Points {
			if !seen[p.T] {
				seen[p.T] = true
				ts = append(ts, p.T)
			}
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	cum := make([]float64, len(ts))
	layers := make([][]float64, len(curves))
	for k, c := range curves {
		vals := map[int64]float64{}
		for _, p := range c.Points {
			vals[p.T] = p.V
		}
		layers[k] = make([]float64, len(ts))
		for i, t := range ts {
			if v, ok := vals[t]; ok && !math.IsNaN(v) {
				cum[i] += v
			}
			layers[k][i] = cum[i]
		}
	}
	ymax := 0.0
	for _, v := range cum {
		ymax = math.Max(ymax, v)
	}
	ymax = niceCeil(ymax)
	lane.YMax = "scale 0–" + withUnit(ymax, spec.unit) + " (stacked)"
	lane.YMaxV = strconv.FormatFloat(ymax, 'g', 6, 64)
	for k := len(curves) - 1; k >= 0; k-- {
		var lower []float64
		if k > 0 {
			lower = layers[k-1]
		}
		cls := "area st" + strconv.Itoa(stageIndex(curves[k].Stage))
		lane.Paths = append(lane.Paths, SVGPath{Class: cls, Title: curves[k].Stage,
			D: areaPath(ts, layers[k], lower, in, ymax, spec.height)})
	}
	for _, c := range curves {
		lane.Legend = append(lane.Legend, LegendItem{Class: "stk st" + strconv.Itoa(stageIndex(c.Stage)), Label: c.Stage})
	}
	return lane
}

func stageIndex(name string) int {
	if s, ok := correlate.ParseStage(name); ok {
		return int(s)
	}
	return correlate.NumStages - 1
}

func containsRole(rs []correlate.Role, r correlate.Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func peak(pts []correlate.Point) float64 {
	m := math.Inf(-1)
	for _, p := range pts {
		if !math.IsNaN(p.V) {
			m = math.Max(m, p.V)
		}
	}
	return m
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 × 10^k (0 stays 1).
// fineCeil is niceCeil with more steps, for a scale fitted to one line:
// 287 ms gets 300, not 500.
func fineCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8} {
		if v <= m*e*1.0000001 {
			return m * e
		}
	}
	return 10 * e
}

func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*e*1.0000001 {
			return m * e
		}
	}
	return 10 * e
}

// plot maps a time and a value onto the lane's box: x in 0..1000, y from
// height−2 (zero) to 2 (ymax).
func plot(t int64, v float64, in TimelineInput, ymax float64, h int) (float64, float64) {
	span := float64(in.To.UnixMilli() - in.From.UnixMilli())
	x := 1000 * float64(t-in.From.UnixMilli()) / span
	y := float64(h) - 2 - (float64(h)-4)*math.Min(math.Max(v/ymax, 0), 1.05)
	return x, y
}

// appendInt writes a whole number, with a separating space unless the
// number's sign separates it.
func appendInt(b []byte, v int64) []byte {
	if v >= 0 && len(b) > 0 {
		c := b[len(b)-1]
		if c >= '0' && c <= '9' {
			b = append(b, ' ')
		}
	}
	return strconv.AppendInt(b, v, 10)
}

// valueAttrs are the path's data-v and data-v0, when it carries values.
func (p SVGPath) valueAttrs() templ.Attributes {
	if p.Values == "" {
		return nil
	}
	return templ.Attributes{"data-v": p.Values, "data-v0": strconv.FormatInt(p.V0, 10)}
}

// tipSeries is how many series of a lane the crosshair lists by value
// (app.js: the rest are "+N more").
const tipSeries = 4

// maxStepValues bounds a series' values on the page (the chart step keeps
// a window to about 240).
const maxStepValues = 2000

// stepValues lists a curve's values on the step grid (time / step), from
// the first point's step on, for the crosshair: comma-separated, "" for
// a step without a point; the last point of a step wins.
func stepValues(pts []correlate.Point, step time.Duration, scale float64) (string, int64) {
	ms := step.Milliseconds()
	if ms <= 0 || len(pts) == 0 {
		return "", 0
	}
	k := func(t int64) int64 { return (t + ms/2) / ms }
	k0 := k(pts[0].T)
	n := k(pts[len(pts)-1].T) - k0 + 1
	if n <= 0 || n > maxStepValues {
		return "", 0
	}
	vals := make([]string, n)
	for _, p := range pts {
		if i := k(p.T) - k0; i >= 0 && i < n && !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
			vals[i] = sig3(p.V * scale)
		}
	}
	return strings.Join(vals, ","), k0
}

// sig3 writes v to the precision the crosshair shows it (app.js fmtVal:
// whole from 100 up, one decimal below; two significant digits under 1),
// never in exponent form and without trailing zeros (12,345 → "12345",
// 94.34 → "94.3", 50.0 → "50", 0.01234 → "0.012").
func sig3(v float64) string {
	a := math.Abs(v)
	dec := 0
	switch {
	case a == 0 || a >= 100:
	case a >= 1:
		dec = 1
	default:
		dec = min(1-int(math.Floor(math.Log10(a))), 6)
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if dec > 0 {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// linePath draws points as one path in whole units of the lane's box (a
// unit is about a pixel: finer coordinates would only add bytes): an
// absolute move, then relative line-tos ("l") whose small deltas take
// half the bytes of absolute coordinates. Where there are more points
// than columns, each column keeps its first, lowest, highest and last
// point, so no spike is lost. The pen lifts over gaps longer than 2.5
// times the series' own spacing — the chart step, or the median distance
// between its points when that is wider (a source pulled every minute
// keeps its 60 s spacing in 15 s chart buckets) — so a scrape outage
// does not look like a straight line, and a coarse series still draws one.
func linePath(pts []correlate.Point, in TimelineInput, scale, ymax float64, h int) string {
	gap := int64(2.5 * float64(max(in.Step, time.Second, medianSpacing(pts)).Milliseconds()))
	b := make([]byte, 0, len(pts)*5)
	var last int64
	var px, py int64
	pen, inLine := false, false
	col, n := int64(-1), 0
	var cmin, cmax, cfirst, clast [2]int64 // per column: (x, y)
	flush := func() {
		if n == 0 {
			return
		}
		pts := [][2]int64{cfirst}
		if n > 1 {
			lo, hi := cmin, cmax
			if lo[0] > hi[0] {
				lo, hi = hi, lo
			}
			for _, p := range [][2]int64{lo, hi, clast} {
				if p != pts[len(pts)-1] {
					pts = append(pts, p)
				}
			}
		}
		for _, p := range pts {
			if !inLine {
				b = append(b, 'l')
				inLine = true
			}
			b = appendInt(b, p[0]-px)
			b = appendInt(b, p[1]-py)
			px, py = p[0], p[1]
		}
		n = 0
	}
	for _, p := range pts {
		if math.IsNaN(p.V) {
			pen = false
			continue
		}
		fx, fy := plot(p.T, p.V*scale, in, ymax, h)
		x, y := int64(math.Round(fx)), int64(math.Round(fy))
		if !pen || p.T-last > gap {
			flush()
			b = append(b, 'M')
			b = appendInt(b, x)
			b = appendInt(b, y)
			px, py, inLine, col = x, y, false, x
			pen, last = true, p.T
			continue
		}
		pen, last = true, p.T
		if x != col {
			flush()
			col = x
		}
		pt := [2]int64{x, y}
		if n == 0 {
			cfirst, cmin, cmax = pt, pt, pt
		}
		if y > cmin[1] {
			cmin = pt // lower on screen: a smaller value
		}
		if y < cmax[1] {
			cmax = pt
		}
		clast = pt
		n++
	}
	flush()
	return string(b)
}

// medianSpacing is the median distance between a series' consecutive
// points (0 with fewer than two): the spacing its source was pulled at.
func medianSpacing(pts []correlate.Point) time.Duration {
	if len(pts) < 2 {
		return 0
	}
	d := make([]int64, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		if dt := pts[i].T - pts[i-1].T; dt > 0 {
			d = append(d, dt)
		}
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return time.Duration(d[len(d)/2]) * time.Millisecond
}

// withUnit writes a lane's value with its unit: "1 replica", "2 replicas".
func withUnit(v float64, unit string) string {
	if v == 1 && unit == "replicas" {
		unit = "replica"
	}
	return FmtNum(v) + " " + unit
}

// gridLines marks a lane at round values under its top (1, 2 or 5 times
// a power of ten apart): up to three, one on a short lane.
func gridLines(ymax float64, unit string, h int) []GridLine {
	if ymax <= 0 || math.IsInf(ymax, 0) {
		return nil
	}
	parts := 4.0
	if h < 60 {
		parts = 2
	}
	// 1, 2 or 5 times a power of ten: a count never gets a line at 2.5.
	e := math.Pow(10, math.Floor(math.Log10(ymax/parts)))
	step := 10 * e
	for _, m := range []float64{1, 2, 5} {
		if m*e >= ymax/parts*0.9999999 {
			step = m * e
			break
		}
	}
	var out []GridLine
	for v := step; v < ymax*0.999 && len(out) < 3; v += step {
		_, y := plot(0, v, TimelineInput{To: time.UnixMilli(1)}, ymax, h) // where plot puts the value
		out = append(out, GridLine{TopPct: 100 * y / float64(h), Label: withUnit(v, unit)})
	}
	return out
}

// appendXY writes one absolute point.
func appendXY(b []byte, cmd byte, x, y float64) []byte {
	if cmd != 0 {
		b = append(b, cmd)
	}
	b = appendInt(b, int64(math.Round(x)))
	return appendInt(b, int64(math.Round(y)))
}

// areaPath draws the band between upper and lower (nil = zero).
func areaPath(ts []int64, upper, lower []float64, in TimelineInput, ymax float64, h int) string {
	if len(ts) == 0 {
		return ""
	}
	b := make([]byte, 0, len(ts)*24)
	for i, t := range ts {
		x, y := plot(t, upper[i], in, ymax, h)
		cmd := byte(0)
		if i == 0 {
			cmd = 'M'
		}
		b = appendXY(b, cmd, x, y)
	}
	for i := len(ts) - 1; i >= 0; i-- {
		v := 0.0
		if lower != nil {
			v = lower[i]
		}
		x, y := plot(ts[i], v, in, ymax, h)
		b = appendXY(b, 0, x, y)
	}
	return string(append(b, 'Z'))
}

// NodeTotals sums replica curves of one role per node into node-level
// curves (GPU memory is exported per pod only), on the shared bucket grid.
func NodeTotals(curves []correlate.Curve, role correlate.Role) []correlate.Curve {
	sums := map[string]map[int64]float64{}
	for _, c := range curves {
		if c.Role != role || c.Level != correlate.LevelReplica || c.Scope.Node == "" {
			continue
		}
		m := sums[c.Scope.Node]
		if m == nil {
			m = map[int64]float64{}
			sums[c.Scope.Node] = m
		}
		for _, p := range c.Points {
			if !math.IsNaN(p.V) {
				m[p.T] += p.V
			}
		}
	}
	nodes := make([]string, 0, len(sums))
	for n := range sums {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	out := make([]correlate.Curve, 0, len(nodes))
	for _, n := range nodes {
		c := correlate.Curve{Role: role, Level: correlate.LevelNode, Scope: correlate.Scope{Node: n}}
		for t, v := range sums[n] {
			c.Points = append(c.Points, correlate.Point{T: t, V: v})
		}
		sort.Slice(c.Points, func(i, j int) bool { return c.Points[i].T < c.Points[j].T })
		out = append(out, c)
	}
	return out
}
