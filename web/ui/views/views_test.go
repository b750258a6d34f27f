package views

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{FmtMs(0.84), "0.8 ms"}, {FmtMs(42.4), "42 ms"}, {FmtMs(1250), "1,250 ms"}, {FmtMs(math.NaN()), "–"},
		{FmtNum(0.4213), "0.42"}, {FmtNum(3.1), "3.1"}, {FmtNum(250.4), "250"}, {FmtNum(12500), "12.5k"}, {FmtNum(2e6), "2M"},
		{FmtPct(42.4), "42%"}, {FmtPct(0.5), "0.5%"},
		// A stage that did not move: "0.0 ms"/"0%", never "-0.0 ms" or a
		// "0.0%" next to a "0%".
		{FmtMs(-0.04), "0.0 ms"}, {FmtMs(-0.4), "-0.4 ms"}, {FmtPct(0.04), "<0.1%"}, {FmtPct(-0.3), "-0.3%"}, {FmtPct(-0.2e-9), ">-0.1%"},
		{FmtIntervalMs(293.4, 1325), "[293, 1,325] ms"}, {FmtIntervalMs(-0.52, 1.42), "[-0.5, 1.4] ms"},
		{FmtIntervalMs(-0.0066, 0.03), "[-0.01, 0.03] ms"}, {FmtIntervalMs(-0.004, 0.03), "[0.00, 0.03] ms"}, {FmtIntervalMs(-0.013, 0.1), "[-0.01, 0.10] ms"},
		{FmtDuration(45 * time.Second), "45 s"}, {FmtDuration(125 * time.Minute), "2 h 5 min"}, {FmtDuration(72 * time.Hour), "3 days"},
		{Ago(time.Unix(0, 0), time.Unix(600, 0)), "10 min ago"},
		{CategoryLabel("cold_start"), "Cold start after scale-up"},
		{string(Style("left", 12.5)), "left:12.50%;"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.7: 1, 1.2: 2, 2.1: 2.5, 3: 5, 9.9: 10, 1234: 2000, 100: 100} {
		if got := niceCeil(in); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}

var t0 = time.Date(2026, 10, 6, 7, 0, 0, 0, time.UTC)

func curve(role correlate.Role, level correlate.Level, sc correlate.Scope, stage string, f func(i int) float64) correlate.Curve {
	c := correlate.Curve{Role: role, Level: level, Scope: sc, Stage: stage}
	for i := 0; i < 120; i++ {
		c.Points = append(c.Points, correlate.Point{T: t0.Add(time.Duration(i) * 30 * time.Second).UnixMilli(), V: f(i)})
	}
	return c
}

func TestTimelineLanesPickLevelsAndCap(t *testing.T) {
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	var curves []correlate.Curve
	for i, m := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		curves = append(curves, curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: m}, "", flat(float64(100*(i+1)))))
		curves = append(curves, curve(correlate.RoleLatencyP50, correlate.LevelModel, correlate.Scope{Model: m}, "", flat(10)))
	}
	curves = append(curves,
		curve(correlate.RoleLatencyP99, correlate.LevelReplica, correlate.Scope{Model: "a", Replica: "a-1", Node: "n1"}, "", flat(5000)),
		curve(correlate.RoleStageTime, correlate.LevelModel, correlate.Scope{Model: "a"}, "queue", flat(30)),
		curve(correlate.RoleStageTime, correlate.LevelModel, correlate.Scope{Model: "a"}, "exec", flat(20)),
		curve(correlate.RoleStageTime, correlate.LevelModel, correlate.Scope{Model: "b"}, "exec", flat(500)))
	in := TimelineInput{From: t0, To: t0.Add(time.Hour), Step: 30 * time.Second, Curves: curves, StageModel: "a", State: State{Base: "/i"}}
	tl := BuildTimeline(in)
	lat := tl.Lanes[0]
	if lat.ID != "latency" || lat.More != 2 || len(lat.Legend) != 6+2 { // six models, P99 and P50 (no P95 drawn)
		t.Fatalf("latency lane: more %d, legend %v", lat.More, lat.Legend)
	}
	// Model level without a filter (the replica curve is not drawn), the
	// highest peaks first, only the top model with its P50.
	if lat.Legend[0].Label != "h" || lat.YMax != "scale 0–1000 ms, per model" {
		t.Errorf("legend[0] %q, ymax %q", lat.Legend[0].Label, lat.YMax)
	}
	if len(lat.Paths) != 7 {
		t.Errorf("%d latency paths, want 6 P99 + 1 P50", len(lat.Paths))
	}
	var stages Lane
	for _, l := range tl.Lanes {
		if l.ID == "stages" {
			stages = l
		}
	}
	if stages.Name != "Time per stage (stacked) · a" || len(stages.Paths) != 2 || stages.YMax != "scale 0–50 ms (stacked)" {
		t.Errorf("stages lane %q with %d areas, %s", stages.Name, len(stages.Paths), stages.YMax)
	}
	// A replica filter switches to replica curves.
	in.Filter = correlate.Scope{Replica: "a-1"}
	if l := BuildTimeline(in).Lanes[0]; len(l.Legend) == 0 || l.Legend[0].Label != "a-1" {
		t.Errorf("with a replica filter the latency lane shows %v", l.Legend)
	}
	// Empty roles say so.
	for _, l := range tl.Lanes {
		if l.ID == "cpu" && l.Empty == "" {
			t.Error("CPU lane without curves has no empty message")
		}
	}
}

// An LLM fleet's token counts get a lane of their own, generated tokens
// solid and prompt tokens dashed; a fleet without them gets no empty row.
func TestTimelineTokensLane(t *testing.T) {
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	m := correlate.Scope{Model: "chat"}
	in := TimelineInput{From: t0, To: t0.Add(time.Hour), Step: 30 * time.Second, State: State{Base: "/i"}, Curves: []correlate.Curve{
		curve(correlate.RoleLatencyP99, correlate.LevelModel, m, "", flat(4000)),
		curve(correlate.RoleOutputTokens, correlate.LevelModel, m, "", func(i int) float64 { return 210 + float64(i/60)*270 }),
		curve(correlate.RolePromptTokens, correlate.LevelModel, m, "", flat(900)),
		curve(correlate.RoleTPOT, correlate.LevelModel, m, "", flat(42)),
		curve(correlate.RoleTTFT, correlate.LevelModel, m, "", flat(240)),
	}}
	var tokens, tpot, ttft *Lane
	tl := BuildTimeline(in)
	for i := range tl.Lanes {
		switch tl.Lanes[i].ID {
		case "tokens":
			tokens = &tl.Lanes[i]
		case "tpot":
			tpot = &tl.Lanes[i]
		case "ttft":
			ttft = &tl.Lanes[i]
		}
	}
	if ttft == nil || ttft.Name != "Time to first token" || len(ttft.Paths) != 1 {
		t.Errorf("time to first token lane %+v", ttft)
	}
	if tpot == nil || tpot.Name != "Time per generated token" || len(tpot.Paths) != 1 {
		t.Errorf("time per token lane %+v", tpot)
	}
	if tokens == nil {
		t.Fatal("no tokens lane for a fleet with token curves")
	}
	if tokens.Name != "Tokens per request: generated / prompt" || len(tokens.Paths) != 2 || tokens.YMax != "scale 0–1000 tokens, per model" {
		t.Errorf("tokens lane %q, %d paths, %q", tokens.Name, len(tokens.Paths), tokens.YMax)
	}
	if tokens.Paths[0].Class != "s0" || tokens.Paths[1].Class != "s0 d1" || tokens.Paths[0].Title != "chat generated" {
		t.Errorf("paths %q %q %q", tokens.Paths[0].Class, tokens.Paths[1].Class, tokens.Paths[0].Title)
	}
	in.Curves = in.Curves[:1]
	for _, l := range BuildTimeline(in).Lanes {
		if l.ID == "tokens" || l.ID == "tpot" || l.ID == "ttft" {
			t.Errorf("a fleet without token curves has a %s lane: %+v", l.ID, l.Empty)
		}
	}
}

func TestLinePathBreaksAtGaps(t *testing.T) {
	in := TimelineInput{From: t0, To: t0.Add(10 * time.Minute), Step: time.Minute}
	pts := []correlate.Point{{T: t0.UnixMilli(), V: 0}, {T: t0.Add(time.Minute).UnixMilli(), V: 10},
		{T: t0.Add(6 * time.Minute).UnixMilli(), V: 10}, {T: t0.Add(7 * time.Minute).UnixMilli(), V: math.NaN()}, {T: t0.Add(8 * time.Minute).UnixMilli(), V: 5}}
	got := linePath(pts, in, 1, 10, 104)
	if want := "M0 102l100-100M600 2M800 52"; got != want {
		t.Fatalf("linePath = %q, want %q", got, want)
	}
}

// A source pulled every minute (WATERLINE_CONFIG step: 1m) keeps its 60 s
// spacing in the 15 s buckets of a window of an hour or less: with the
// gap rule on the chart step alone every point started its own subpath
// and the lanes showed a legend but no line. The rule follows the
// series' own spacing, so the line is drawn and a scrape outage (here
// 5 min without points) still lifts the pen.
func TestLinePathFollowsTheSeriesSpacing(t *testing.T) {
	from := t0 // a pure drawing test: no clock reads its date
	to := from.Add(30 * time.Minute)
	step := 15 * time.Second // incident.ChartStep(from, to) for 30 min
	var pts []correlate.Point
	for at := from; at.Before(to); at = at.Add(time.Minute) { // a 1 min pull step
		if at.After(from.Add(10*time.Minute)) && at.Before(from.Add(15*time.Minute)) {
			continue // scrape outage
		}
		v := 100.0
		if at.After(from.Add(15 * time.Minute)) {
			v = 900
		}
		pts = append(pts, correlate.Point{T: at.UnixMilli(), V: v})
	}
	tl := BuildTimeline(TimelineInput{From: from, To: to, Step: step, State: State{Base: "/incidents/1"}, Target: "#filtered",
		Curves: []correlate.Curve{{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}, Points: pts}}})
	drawn := false
	for _, l := range tl.Lanes {
		if l.ID != "latency" {
			continue
		}
		drawn = true
		if l.Empty != "" || len(l.Paths) == 0 {
			t.Fatalf("latency lane empty: %q", l.Empty)
		}
		d := l.Paths[0].D
		if strings.Count(d, "l") != 2 || strings.Count(d, "M") != 2 {
			t.Errorf("a 1-minute series over 30 min with one 5 min outage: want two drawn runs (M…l… twice), got d=%.160s", d)
		}
	}
	if !drawn {
		t.Fatal("no latency lane")
	}
}

// More points than columns: each column keeps its extremes, so a one-point
// spike survives, and the path is shorter than one point per sample.
func TestLinePathKeepsColumnExtremes(t *testing.T) {
	in := TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Second}
	var pts []correlate.Point
	for i := 0; i < 3600; i++ {
		v := 10.0
		if i == 1801 {
			v = 100 // one second's spike
		}
		pts = append(pts, correlate.Point{T: t0.Add(time.Duration(i) * time.Second).UnixMilli(), V: v})
	}
	got := linePath(pts, in, 1, 100, 104)
	if !strings.Contains(got, "-90") || !strings.Contains(got, " 90") {
		t.Errorf("the spike to the top is lost: %s", got)
	}
	if len(got) > 5000 { // one point per sample would take ~25 kB
		t.Errorf("path of %d bytes for 1000 columns", len(got))
	}
}

// A model keeps its colour from lane to lane, whatever its rank there;
// nodes are drawn in greys.
func TestTimelineOneColourPerModel(t *testing.T) {
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	curves := []correlate.Curve{
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "a"}, "", flat(100)),
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "b"}, "", flat(900)),
		curve(correlate.RoleQPS, correlate.LevelModel, correlate.Scope{Model: "a"}, "", flat(900)),
		curve(correlate.RoleQPS, correlate.LevelModel, correlate.Scope{Model: "b"}, "", flat(100)),
		curve(correlate.RoleGPUUtil, correlate.LevelReplica, correlate.Scope{Model: "b", Replica: "b-1", Node: "n1"}, "", flat(90)),
		curve(correlate.RoleNodeCPU, correlate.LevelNode, correlate.Scope{Node: "n1"}, "", flat(0.5)),
	}
	tl := BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Curves: curves, StageModel: "a", State: State{Base: "/i"}})
	colour := map[string]string{}
	for _, l := range tl.Lanes {
		for _, g := range l.Legend {
			m := strings.Fields(g.Label)[0]
			if strings.HasPrefix(m, "b-") {
				m = "b"
			}
			if g.Class[0] == 'k' {
				continue
			}
			if c, ok := colour[m]; ok && c != g.Class {
				t.Errorf("%s is %s on one lane and %s on lane %s", m, c, g.Class, l.ID)
			}
			colour[m] = g.Class
		}
		if l.ID == "gpu" && l.Per != "per replica" {
			t.Errorf("GPU lane of replica curves says %q", l.Per)
		}
	}
	if colour["a"] != "s0" || colour["b"] != "s1" || colour["n1"][0] != 'n' {
		t.Errorf("colours %v: want the incident's model first, nodes grey", colour)
	}
}

func TestEventsGroupedPerBucket(t *testing.T) {
	var evs []correlate.Event
	for i := 0; i < 50; i++ { // 50 restarts within one bucket
		evs = append(evs, correlate.Event{Kind: correlate.KindReplicaRestart, Time: t0.Add(10*time.Minute + time.Duration(i)*time.Second),
			Scope: correlate.Scope{Replica: "r"}})
	}
	evs = append(evs, correlate.Event{Kind: correlate.KindDeploy, Time: t0.Add(30 * time.Minute), Scope: correlate.Scope{Model: "m", Version: "v2"}, Summary: "rollout"},
		correlate.Event{Kind: correlate.KindDeploy, Time: t0.Add(-time.Minute)}) // outside: ignored
	lanes, total := eventLanes(evs, t0, t0.Add(96*time.Minute), State{Base: "/i"})
	if total != 51 {
		t.Fatalf("total %d", total)
	}
	changes, scaling := lanes[0], lanes[1]
	if len(changes.Marks) != 1 || changes.Marks[0].Text != "D" || !strings.Contains(changes.Marks[0].Title, "deploy model=m version=v2: rollout") {
		t.Errorf("deploy mark %+v", changes.Marks)
	}
	if len(scaling.Marks) != 1 || scaling.Marks[0].Text != "50" || !strings.Contains(scaling.Marks[0].Title, "+47 more") {
		t.Errorf("restart mark %+v", scaling.Marks)
	}
	if !strings.Contains(scaling.Marks[0].Href, "from=2026-10-06T07%3A08") {
		t.Errorf("a bucket links to a zoom around it: %s", scaling.Marks[0].Href)
	}
}

func TestConcRows(t *testing.T) {
	rows := []correlate.Concentration{
		{Dims: map[string]string{"replica": "r-7", "node": "n-3"}, SelectionPct: 62, BaselinePct: 4, RiskRatio: 15.2, Support: 0.62, P99WithoutMs: 380, P99DeltaMs: 1500},
		{Dims: map[string]string{"replica_age": "young"}, SelectionPct: 40, BaselinePct: 5},
	}
	s := State{Base: "/incidents/1", Tab: "baseline", Page: 3}
	c := BuildConc(rows, s, nil)
	if c.Rows[0].Key != "node=n-3 · replica=r-7" || c.Rows[0].Href != "/incidents/1?replica=r-7&node=n-3&tab=baseline" || c.Rows[0].Selected {
		t.Errorf("row 0: %+v", c.Rows[0])
	}
	if c.Rows[1].Href != "" {
		t.Errorf("replica_age is not a filter, yet the row links to %s", c.Rows[1].Href)
	}
	sel := BuildConc(rows, State{Base: "/incidents/1", Scope: correlate.Scope{Replica: "r-7", Node: "n-3"}}, nil)
	if !sel.Rows[0].Selected || sel.Rows[0].Href != "/incidents/1" {
		t.Errorf("selected row: %+v (a click clears it)", sel.Rows[0])
	}
	if BuildConc(nil, s, nil).Empty == "" {
		t.Error("no empty state")
	}
}

func TestSampleTable(t *testing.T) {
	mk := func(id string, total float64) correlate.Sample {
		x := correlate.Sample{RequestID: id, Time: t0, Model: "m", TotalMs: total, SampleRate: 1}
		for i := range x.StagesMs {
			x.StagesMs[i] = math.NaN()
		}
		x.StagesMs[correlate.StageQueue], x.StagesMs[correlate.StageExec] = total/2, total/2
		return x
	}
	page := store.SamplePage{Total: 60, Samples: []correlate.Sample{mk("a", 800), mk("b/1", 400)}}
	st := State{Base: "/incidents/1", Page: 2, Sort: "queue"}
	tb := BuildSampleTable(SampleTableInput{Page: page, State: st, WindowTotal: 60, SlowMs: map[string]float64{"m": 300}, DetailBase: "/incidents/1/samples"})
	// The pager says what it counts: the page's other figures (requests
	// re-weighted, samples in the view) count other things.
	if tb.Range != "26–27 of 60 slow samples of all models" || tb.Prev != "/incidents/1?sort=queue" || tb.Next != "/incidents/1?sort=queue&page=3" {
		t.Errorf("pager: %q %q %q", tb.Range, tb.Prev, tb.Next)
	}
	var queue SortColumn
	for _, c := range tb.Columns {
		if c.Label == "queue" {
			queue = c
		}
	}
	if queue.Sort != "descending" || queue.Href != "/incidents/1?sort=queue&dir=asc" {
		t.Errorf("current sort column %+v (a click flips it, page 1)", queue)
	}
	r := tb.Rows[1]
	if r.DetailHref != "/incidents/1/samples/b%2F1?t="+itoa64(t0.UnixMilli()) || len(r.Segments) != 2 || r.Segments[0].Width != 25 {
		t.Errorf("row: %+v", r)
	}
	if !strings.Contains(tb.Note, "m ≥ 300 ms") {
		t.Errorf("note %q", tb.Note)
	}
	if tb.Tokens {
		t.Error("a page without token counts has a Tokens column")
	}
	// An LLM's requests: prompt → generated tokens, in the table and the
	// detail; an unknown count reads "?".
	llm, short := mk("c", 900), mk("d", 500)
	llm.InputTokens, llm.OutputTokens, short.OutputTokens = 1812, 64, 7
	tb = BuildSampleTable(SampleTableInput{Page: store.SamplePage{Total: 2, Samples: []correlate.Sample{llm, short}}, State: State{Base: "/i"},
		WindowTotal: 2, SlowMs: map[string]float64{"m": 300}, DetailBase: "/i/samples"})
	if !tb.Tokens || tb.Rows[0].Tokens != "1,812 → 64" || tb.Rows[1].Tokens != "? → 7" {
		t.Errorf("tokens: %v %q %q", tb.Tokens, tb.Rows[0].Tokens, tb.Rows[1].Tokens)
	}
	if d := BuildSampleDetail(llm, nil); !slices.Contains(d.Dims, KV{"tokens (prompt → generated)", "1,812 → 64"}) {
		t.Errorf("detail dims %v", d.Dims)
	}
	none := BuildSampleTable(SampleTableInput{State: State{Base: "/i"}})
	if !none.HowTo {
		t.Error("a window without any sample must say how to send them")
	}
	filt := BuildSampleTable(SampleTableInput{State: State{Base: "/i", Scope: correlate.Scope{Tenant: "x"}}, WindowTotal: 10})
	if filt.HowTo || filt.Clear != "/i" {
		t.Errorf("filtered empty: %+v", filt)
	}
}

func TestOpenGraphNeverNamesTenants(t *testing.T) {
	onset := time.Date(2026, 3, 2, 20, 2, 40, 0, time.UTC)
	og := BuildOpenGraph(OGInput{ID: 5, Title: "P99 up for ACME-EU and t-acme", TopCategory: "capacity", TopScore: 0.8,
		P99Before: 420, P99After: 1900, Tenants: []string{"t-acme", "acme-eu", "acme"},
		Model: "chat-7b", Quantile: "P95", Status: "ongoing", Onset: &onset})
	if og.Title != "Incident #5: P99 up for [tenant] and [tenant]" {
		t.Errorf("title %q", og.Title)
	}
	// What a chat reader needs at a glance: the likely cause, which
	// model, how far and since when — no scoring jargon.
	if og.Description != "Likely cause: Capacity / traffic peak (0.80) · chat-7b P95 420 ms → 1,900 ms, ongoing · since Mar 2 20:02 UTC" {
		t.Errorf("description %q", og.Description)
	}
	if og := BuildOpenGraph(OGInput{ID: 5, Title: "x", P99Before: 420, P99After: 1900}); og.Description != "Analysis pending · P99 420 ms → 1,900 ms" {
		t.Errorf("description without analysis details %q", og.Description)
	}
	// A P99 that sat at its histogram's top bucket was at least that.
	if og := BuildOpenGraph(OGInput{ID: 5, Title: "x", P99Before: 420, P99After: 10000, AfterAtCeiling: true}); og.Description != "Analysis pending · P99 420 ms → ≥ 10,000 ms" {
		t.Errorf("description at the ceiling %q", og.Description)
	}
	if og := BuildOpenGraph(OGInput{ID: 5, Title: "x", TopCategory: "unexplained", Verdict: "Latency rise not judged"}); og.Description != "Latency rise not judged" ||
		len(og.Labels) != 1 || og.Labels[0].K != OGLabelVerdict {
		t.Errorf("a verdict instead of a cause: %q %+v", og.Description, og.Labels)
	}
	if ScrubTenants("nothing here", nil) != "nothing here" {
		t.Error("scrub without tenants changed the text")
	}
}

// A scrape outage leaves a 13-minute hole in the P99 curve, after which
// it stands 8× higher. The card's image drew a line across the hole — a
// ramp no point shows — and the onset as a line at its first point after.
func TestOGImageDrawsAHoleAsAHole(t *testing.T) {
	var pts []correlate.Point
	for i := 0; i < 120; i++ {
		if i >= 47 && i < 60 {
			continue // no points: the hole
		}
		v := 100.0
		if i >= 60 {
			v = 800
		}
		pts = append(pts, correlate.Point{T: t0.Add(time.Duration(i) * time.Minute).UnixMilli(), V: v})
	}
	gap, on := t0.Add(47*time.Minute), t0.Add(60*time.Minute)
	b, err := OGImage(OGImageInput{Heading: "Incident #1", Title: "x", From: t0, To: t0.Add(2 * time.Hour), Curve: pts, Onset: &on, OnsetGapFrom: &gap})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	is := func(x, y int, r0, g0, b0 uint32) bool {
		r, g, b, _ := img.At(x, y).RGBA()
		return r>>8 == r0 && g>>8 == g0 && b>>8 == b0
	}
	// Chart x of a minute: 40 + 1120 × minute / 120.
	at := func(min float64) int { return 40 + int(1120*min/120) }
	for _, m := range []float64{50, 53.5, 57} {
		for y := 290; y < 580; y++ {
			if is(at(m), y, 0x00, 0x72, 0xb2) {
				t.Errorf("the curve's line crosses the hole at minute %v (y %d)", m, y)
				break
			}
		}
	}
	// The gap is drawn edge to edge in vermillion: its start, not only the
	// onset, is marked.
	edge := 0
	for y := 300; y < 500; y++ {
		if is(at(47), y, 0xd5, 0x5e, 0x00) {
			edge++
		}
	}
	if edge < 150 {
		t.Errorf("the gap's start (minute 47) is marked on %d of 200 px", edge)
	}
}

func TestOGImageSize(t *testing.T) {
	on := t0.Add(30 * time.Minute)
	b, err := OGImage(OGImageInput{Heading: "Incident #1", Title: "x → y…", From: t0, To: t0.Add(time.Hour), Onset: &on,
		Curve:  curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{}, "", func(i int) float64 { return float64(i * i) }).Points,
		Spikes: []correlate.Spike{{Start: on, End: on.Add(10 * time.Minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != OGWidth || img.Bounds().Dy() != OGHeight {
		t.Fatalf("%v %v", err, img.Bounds())
	}
	// The onset line is drawn in vermillion somewhere in the chart.
	found := false
	for y := 300; y < 560 && !found; y++ {
		for x := 40; x < 1160; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == 0xd5 && g>>8 == 0x5e && b>>8 == 0 {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("no onset marker in the image")
	}
	if latin1("a → b … ✓") != "a -> b ... ?" {
		t.Errorf("latin1: %q", latin1("a → b … ✓"))
	}
}

// Text from outside (an Alertmanager title, a cause summary, an event, a
// tenant name) cannot add lines, HTML, links or images to the export,
// and the export links only to http(s) URLs.
func TestMarkdownEscapesInjection(t *testing.T) {
	in, a := fixtureIncident()
	evil := "x\n# pwned\r\n<script>alert(1)</script> [click](javascript:alert(1)) ![i](http://evil.example/i.png) | cell `code` *b* <img src=x onerror=alert(1)>"
	in.Incident.Title = evil
	a.Headline.Title = evil
	a.Causes[0].Summary = evil
	a.Causes[0].Actions = []string{evil}
	a.Scope.Summary = evil
	a.Reconciliation = evil
	a.Events[0].Summary = evil
	a.Checklist[0].Answer = evil
	a.Impact[0].Tenants[0].Name = evil
	md := Markdown(MarkdownInput{Incident: in.Incident, Analysis: &a, Version: 2, Permalink: "javascript:alert(1)",
		ShareURL: "https://w.test/s/abc", ImageURL: "data:image/png;base64,AAAA", Now: in.Now})
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "# pwned") || strings.HasPrefix(line, "#") && i > 0 && !strings.HasPrefix(line, "## ") && !strings.HasPrefix(line, "### ") {
			t.Errorf("line %d is a heading the input added: %q", i+1, line)
		}
		if rawHTML.MatchString(autolink.ReplaceAllString(line, "")) {
			t.Errorf("line %d has raw HTML: %q", i+1, line)
		}
		if strings.Count(line, "|") > 0 && strings.HasPrefix(line, "|") {
			if n, head := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"), strings.Count(tableHeadBefore(md, line), "|"); head > 0 && n != head {
				t.Errorf("line %d has %d cell separators, its table %d: %q", i+1, n, head, line)
			}
		}
	}
	// Every link or image destination is http(s); escaped brackets are no link.
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`[^\\]\]\(([^)]*)\)`), regexp.MustCompile(`(?:^|[^\\])<([a-zA-Z][a-zA-Z0-9+.-]*:[^>]*)>`)} {
		for _, m := range re.FindAllStringSubmatch(md, -1) {
			if !strings.HasPrefix(m[1], "http://") && !strings.HasPrefix(m[1], "https://") {
				t.Errorf("link to %q", m[1])
			}
		}
	}
	if strings.Contains(md, "javascript:alert(1)>") || strings.Contains(md, "data:image") {
		t.Errorf("a non-http link survived:\n%s", md)
	}
	if !strings.Contains(md, "<https://w.test/s/abc>") {
		t.Errorf("the share link is missing:\n%s", md)
	}
	if !strings.HasPrefix(md, "# Incident #7: x \\# pwned") {
		t.Errorf("title line: %q", strings.SplitN(md, "\n", 2)[0])
	}
}

// autolink is the export's own link form.
var autolink = regexp.MustCompile(`<https?://[^\s<>]*>`)

// rawHTML is an unescaped tag opening.
var rawHTML = regexp.MustCompile(`(?:^|[^\\])<[a-zA-Z/!?]`)

// tableHeadBefore is the header line of the table holding line.
func tableHeadBefore(md, line string) string {
	lines := strings.Split(md, "\n")
	head := ""
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") {
			head = ""
			continue
		}
		if head == "" {
			head = l
		}
		if l == line {
			return head
		}
	}
	return ""
}

// The export carries what a postmortem needs: the share link, peak,
// recovery and duration, every cause and the ones ruled out, the chart.
func TestMarkdownPostmortemFacts(t *testing.T) {
	in, a := fixtureIncident()
	a.Causes = append(a.Causes, correlate.Cause{Category: correlate.CatCapacity, Score: 0.1, Summary: "Traffic was flat."},
		correlate.Cause{Category: correlate.CatRouting, Score: 0.05, Summary: "Routing even."},
		correlate.Cause{Category: correlate.CatIngress, Score: 0.02, Summary: "Gateway fine."})
	a.NotAssessable = []correlate.NotAssessable{{Category: correlate.CatBatching, Reason: "no batch-size curve for chat"}}
	a.Causes[0].Evidence[0].Event = "ev-1"
	a.Events[0].ID = "ev-1"
	md := Markdown(MarkdownInput{Incident: in.Incident, Analysis: &a, Version: 2, Permalink: "http://w.test/incidents/7",
		ShareURL: "http://w.test/s/tok", ImageURL: "http://w.test/s/tok/og.png", Now: in.Now})
	for _, want := range []string{"<http://w.test/s/tok>", "**Peak:** chat P99 1,310 ms at 2026-10-06 07:45:00 UTC", "**Recovered:** 2026-10-06 07:55:00 UTC",
		"**Duration:** 15 min", "![Latency chart of the incident](http://w.test/s/tok/og.png)", "### 4. Ingress / gateway",
		"Batching window: no batch-size curve for chat", "Cold start after scale-up: ruled out", "2 min before the onset", "| yes |",
		"**Slow requests:** ≈1,234"} {
		if !strings.Contains(md, want) {
			t.Errorf("export lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "more causes") || strings.Contains(md, "-120 s") || strings.Contains(md, "opened by manual") {
		t.Errorf("export still cuts causes or speaks in raw offsets:\n%s", md)
	}
}

// The heatmap grids samples by time and log latency; a brushed box
// compares its requests with the rest of the window and puts the value
// they share first.
func TestHeatmapAndBubbleUp(t *testing.T) {
	var samples []correlate.Sample
	for i := 0; i < 600; i++ {
		x := correlate.Sample{Time: t0.Add(time.Duration(i) * 6 * time.Second), Model: "chat", Replica: "r-" + strconv.Itoa(i%3), Tenant: "t-1", TotalMs: 50, SampleRate: 1}
		if i >= 300 && i%3 == 0 {
			x.TotalMs, x.Replica = 2000, "r-0" // slow after the half hour, all on r-0
		}
		samples = append(samples, x)
	}
	h := BuildHeatmap(samples, t0, t0.Add(time.Hour), 200, State{Base: "/incidents/1"})
	if h.Empty != "" || len(h.Cells) != h.Cols*h.Rows || h.LoMs != 10 || h.HiMs != 10000 || h.Count != 600 {
		t.Fatalf("heatmap %+v", h)
	}
	// The slow requests sit in the right half, near the top.
	top := strings.IndexFunc(h.Cells, func(r rune) bool { return r != '0' })
	if row, col := top/h.Cols, top%h.Cols; col < h.Cols/2 || row > h.Rows/2 {
		t.Errorf("first shaded cell at row %d, column %d", row, col)
	}
	sel, err := ParseSelection(strconv.FormatInt(t0.Add(30*time.Minute).UnixMilli(), 10) + "," + strconv.FormatInt(t0.Add(time.Hour).UnixMilli(), 10) + ",1000,5000")
	if err != nil {
		t.Fatal(err)
	}
	b := BuildBubbleUp(samples, sel, State{Base: "/incidents/1"})
	if b.Selected != 100 || len(b.Rows) == 0 || b.Rows[0].Key != "replica=r-0" || b.Rows[0].Sel != "100%" {
		t.Fatalf("bubbleup: %d selected, rows %+v", b.Selected, b.Rows)
	}
	if !strings.Contains(b.Rows[0].Href, "replica=r-0") {
		t.Errorf("row link %q", b.Rows[0].Href)
	}
	for _, bad := range []string{"", "1,2,3", "2,1,0,5", "0,1,5,5", "a,b,c,d", "0,1,-1,5"} {
		if _, err := ParseSelection(bad); err == nil {
			t.Errorf("selection %q accepted", bad)
		}
	}
}

// Samples stored before ingest bounded latencies (or by a bad client
// then) must not break the page: a total of 1.5e308 made the scale's
// top +Inf and its tick loop ran until the server was out of memory.
func TestHeatmapIgnoresImpossibleLatencies(t *testing.T) {
	samples := []correlate.Sample{
		{Time: t0.Add(time.Minute), Model: "chat", TotalMs: 50, SampleRate: 1},
		{Time: t0.Add(2 * time.Minute), Model: "chat", TotalMs: 1.5e308, SampleRate: 1},
		{Time: t0.Add(3 * time.Minute), Model: "chat", TotalMs: math.Inf(1), SampleRate: 1},
		{Time: t0.Add(4 * time.Minute), Model: "chat", TotalMs: 80, SampleRate: 1e308},
	}
	h := BuildHeatmap(samples, t0, t0.Add(time.Hour), 200, State{Base: "/incidents/1"})
	if h.Count != 2 || h.HiMs != 100 || len(h.Ticks) > 12 || !strings.ContainsAny(h.Cells, "123456789") {
		t.Fatalf("heatmap %d samples, %v–%v ms, %d ticks", h.Count, h.LoMs, h.HiMs, len(h.Ticks))
	}
}

// The incident's model doubling from 122 to 250 ms under a healthy model
// flat at 600 ms was a 13-pixel bump on a 0–1,000 ms lane with no marks.
// The latency lane fits its scale to the incident's model when another
// model would flatten it, says so, and lets the higher lines run off the
// top (marked, so the crosshair says "above"); its gridlines carry values.
func TestLatencyLaneFitsTheIncidentsModel(t *testing.T) {
	curves := []correlate.Curve{
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "chat-8b"}, "", func(int) float64 { return 600 }),
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "rerank-base"}, "", func(i int) float64 {
			if i >= 60 {
				return 250
			}
			return 122
		}),
	}
	tl := BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Curves: curves, StageModel: "rerank-base", State: State{Base: "/i"}})
	var lane Lane
	for _, l := range tl.Lanes {
		if l.ID == "latency" {
			lane = l
		}
	}
	top, _ := strconv.ParseFloat(lane.YMaxV, 64)
	if top < 250 || top > 400 || !strings.Contains(lane.YMax, "rerank-base") {
		t.Fatalf("latency lane scale %q (%v), want it fitted to rerank-base", lane.YMax, top)
	}
	if len(lane.Legend) == 0 || !strings.HasPrefix(lane.Legend[0].Label, "rerank-base") {
		t.Errorf("legend %+v: the incident's model first", lane.Legend)
	}
	clipped := map[string]bool{}
	for _, p := range lane.Paths {
		clipped[p.Title] = p.Clipped
	}
	if !clipped["chat-8b P99"] || clipped["rerank-base P99"] {
		t.Errorf("clipped lines %v, want chat-8b's only", clipped)
	}
	if len(lane.Grid) < 2 {
		t.Fatalf("gridlines %+v", lane.Grid)
	}
	for _, g := range lane.Grid {
		if g.Label == "" || g.TopPct <= 0 || g.TopPct >= 100 {
			t.Errorf("gridline %+v", g)
		}
	}
	// Filtered to one model, or with no model standing out, nothing is
	// fitted or clipped.
	tl = BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Curves: curves[1:], StageModel: "rerank-base", State: State{Base: "/i"}})
	for _, l := range tl.Lanes {
		if l.ID == "latency" && strings.Contains(l.YMax, "fitted") {
			t.Errorf("one model: %q", l.YMax)
		}
	}
}

// "zoom in" closes in on the onset when the view holds it (the middle of
// the window is rarely where anything happened); otherwise on the middle.
func TestZoomInClosesInOnTheOnset(t *testing.T) {
	onset := t0.Add(45 * time.Minute)
	tl := BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Onset: &onset, State: State{Base: "/i"}})
	var zoom string
	for _, l := range tl.Nav {
		if l.Text == "zoom in" {
			zoom = l.Href
		}
	}
	u, err := url.Parse(zoom)
	if err != nil {
		t.Fatal(err)
	}
	from, _ := time.Parse(time.RFC3339, u.Query().Get("from"))
	to, _ := time.Parse(time.RFC3339, u.Query().Get("to"))
	if mid := from.Add(to.Sub(from) / 2); !mid.Equal(onset) || to.Sub(from) != 30*time.Minute {
		t.Fatalf("zoom in %q: %v–%v, want 30 minutes around the onset %v", zoom, from, to, onset)
	}
}

// The heatmap says when (a time axis, the onset) as well as how slow, and
// what its dashed line is; counts read with separators.
func TestHeatmapHasATimeAxisAndSaysWhatItDraws(t *testing.T) {
	var samples []correlate.Sample
	for i := 0; i < 12000; i++ {
		samples = append(samples, correlate.Sample{Time: t0.Add(time.Duration(i) * 300 * time.Millisecond), Model: "chat", TotalMs: 50 + float64(i%200), SampleRate: 1})
	}
	onset := t0.Add(30 * time.Minute)
	h := BuildHeatmap(samples, t0, t0.Add(time.Hour), 200, State{Base: "/incidents/1"})
	h.SetOnset(&onset, nil)
	if len(h.XTicks) < 2 || h.OnsetPct < 49 || h.OnsetPct > 51 {
		t.Fatalf("time axis %+v, onset at %v%%", h.XTicks, h.OnsetPct)
	}
	var b strings.Builder
	if err := HeatmapView(h).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"12,000 request samples of all models in this view (" + FmtSpan(t0, t0.Add(time.Hour)) + ")", "200 ms", "heat-x", "heat-onset", `class="heat-tz muted small" aria-hidden="true">UTC<`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("heatmap lacks %q", want)
		}
	}
	// With several models' thresholds, the line is the lowest of them.
	h.SlowOfSeveral = true
	b.Reset()
	if err := HeatmapView(h).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "lowest of the models") {
		t.Error("the dashed line of several thresholds reads as the one threshold")
	}
}

// A threshold outside the latency axis gets no dashed line (app.js draws
// it only inside), so the note does not point at one: in the live demo,
// filtered to chat-8b (samples 100 ms and up), it named a "dashed line"
// at embed-small's 75 ms that was nowhere on the chart.
func TestHeatmapSaysWhenItsThresholdIsOffTheAxis(t *testing.T) {
	var samples []correlate.Sample
	for i := 0; i < 600; i++ {
		samples = append(samples, correlate.Sample{Time: t0.Add(time.Duration(i) * 5 * time.Second), Model: "chat", TotalMs: 150 + float64(i%300), SampleRate: 1})
	}
	for _, c := range []struct {
		slow    float64
		several bool
		off     bool
	}{{75, true, true}, {75, false, true}, {200, false, false}, {200, true, false}} {
		h := BuildHeatmap(samples, t0, t0.Add(time.Hour), c.slow, State{Base: "/incidents/1"})
		h.SlowOfSeveral = c.several
		var b strings.Builder
		if err := HeatmapView(h).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		says := strings.Contains(b.String(), "The dashed line")
		if h.SlowOff != c.off || says == c.off || (c.off && !strings.Contains(b.String(), "outside the latency axis")) {
			t.Errorf("threshold %v ms on an axis %v–%v ms (lowest of several: %v): off %v, the note says %q",
				c.slow, h.LoMs, h.HiMs, c.several, h.SlowOff, b.String()[strings.Index(b.String(), "<p"):strings.Index(b.String(), "</p>")])
		}
	}
}

// The page states only what the data shows: with no judged rise no cause
// was "ruled out" (each scores 0 for want of anything to explain); a stage
// the server does not time is "not timed", not "0 ms → 0 ms, 0%"; curves
// (means) get no confidence interval; and with no analysis yet the
// changes card does not say no change happened.
func TestIncidentPageSaysOnlyWhatTheDataShows(t *testing.T) {
	in, a := fixtureIncident()
	a.Impact = nil
	a.Headline = correlate.Headline{Title: "Latency rise not judged"}
	a.Stages = []correlate.StageShare{{Stage: "exec", BeforeMs: 40, DuringMs: 120, DeltaMs: 80, DeltaLoMs: 80, DeltaHiMs: 80, Share: 1},
		{Stage: "queue"}}
	a.StageSource = "curves"
	in.Analysis = &a
	p := BuildIncident(in)
	if len(p.Ruled) != 0 {
		t.Errorf("ruled out with no judged rise: %v", p.Ruled)
	}
	md := Markdown(MarkdownInput{Incident: in.Incident, Analysis: &a, Version: 2, Now: in.Now})
	if strings.Contains(md, "ruled out, no supporting evidence") {
		t.Error("the export rules causes out with no judged rise")
	}
	if !strings.Contains(md, "| queue | not timed |") || strings.Contains(md, "[80, 80] ms") {
		t.Errorf("the export's stages: untimed or curve intervals shown:\n%s", md)
	}
	rows := map[string]StageRow{}
	for _, r := range p.Stages.Rows {
		rows[r.Stage] = r
	}
	if r := rows["queue"]; r.Before != "not timed" || r.Share != "–" {
		t.Errorf("an untimed stage: %+v", r)
	}
	if r := rows["exec"]; r.Interval != "–" || r.Delta != "+80 ms" {
		t.Errorf("a stage from curves: %+v", r)
	}
	if strings.Contains(p.Stages.Source, "95%") {
		t.Errorf("curves' caption promises an interval: %q", p.Stages.Source)
	}
	in.Analysis, in.Status = nil, "pending"
	if p := BuildIncident(in); !strings.Contains(p.AlignedEmpty, "No analysis yet") {
		t.Errorf("changes card with no analysis: %q", p.AlignedEmpty)
	}
}

// A model measured on P95 only is labelled so, and a baseline that was
// not measured (stored as 0) reads "–", not a measured "0.0 ms".
func TestImpactSaysItsQuantileAndNoFakeZero(t *testing.T) {
	in, a := fixtureIncident()
	a.Impact = []correlate.Impact{{Model: "chat", Quantile: "P95", BaselineP99Ms: 0, DuringP99Ms: 900, PeakP99Ms: 950, Status: "ongoing"}}
	in.Analysis = &a
	p := BuildIncident(in)
	if len(p.Header.Impact) != 1 || p.Header.Impact[0].Baseline != "–" || p.Header.Impact[0].Quantile != "P95" {
		t.Fatalf("impact %+v", p.Header.Impact)
	}
	md := Markdown(MarkdownInput{Incident: in.Incident, Analysis: &a, Version: 2, Now: in.Now})
	if strings.Contains(md, "0.0 ms") || !strings.Contains(md, "| chat | P95 | – |") {
		t.Errorf("export impact:\n%s", md)
	}
}

// Before an analysis gives a slow threshold every sample counts as slow:
// the table says so instead of calling them all "slow samples".
func TestSampleTableWithoutThreshold(t *testing.T) {
	page := store.SamplePage{Total: 3, Samples: []correlate.Sample{{RequestID: "a", Model: "m", TotalMs: 10}}}
	tb := BuildSampleTable(SampleTableInput{Page: page, State: State{Base: "/i"}, WindowTotal: 3})
	if strings.Contains(tb.Range, "slow") || !strings.Contains(tb.Note, "No slow threshold yet") {
		t.Errorf("range %q note %q", tb.Range, tb.Note)
	}
	base := BuildSampleTable(SampleTableInput{State: State{Base: "/i", Tab: "baseline"}, WindowTotal: 3})
	if strings.Contains(base.Empty, "is slow") {
		t.Errorf("baseline tab: %q", base.Empty)
	}
	with := BuildSampleTable(SampleTableInput{Page: page, State: State{Base: "/i"}, WindowTotal: 3, DefaultSlowMs: 250})
	if !strings.Contains(with.Range, "slow samples") || !strings.Contains(with.Note, "250 ms") {
		t.Errorf("with a default threshold: range %q note %q", with.Range, with.Note)
	}
}

// Before an analysis the concentration table says it has none yet, not
// that slow requests are spread evenly.
func TestConcentrationBeforeAnalysis(t *testing.T) {
	if c := BuildConc(nil, State{Base: "/i"}, nil); !strings.Contains(c.Empty, "No analysis yet") {
		t.Errorf("empty concentration without an analysis: %q", c.Empty)
	}
}

// A page showing a share link just made does not poll for the analysis:
// the poll ends in a reload, and the link is shown only once — a reload
// seconds after making it lost it for good. The banner says to reload.
func TestNewShareLinkStopsTheReloadingPoll(t *testing.T) {
	for _, recomputing := range []bool{false, true} {
		in, a := fixtureIncident()
		in.Status, in.Recomputing = "pending", recomputing
		if !recomputing {
			in.Analysis = nil
		} else {
			in.Analysis = &a
		}
		in.ShareURL = "http://w.test/s/abc"
		var buf bytes.Buffer
		if err := IncidentBody(BuildIncident(in)).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		html := buf.String()
		if strings.Contains(html, "every 2s") {
			t.Errorf("recomputing=%v: the page polls (and reloads) while it shows the new link", recomputing)
		}
		if !strings.Contains(html, "reload the page") {
			t.Errorf("recomputing=%v: no word on reloading for the analysis", recomputing)
		}
		in.ShareURL = ""
		buf.Reset()
		if err := IncidentBody(BuildIncident(in)).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "every 2s") {
			t.Errorf("recomputing=%v: no poll without a new link", recomputing)
		}
	}
}

// The live view of a frozen incident says it shows live data, links back
// to the frozen copy, and its sample rows open the live sample: the
// banner said "the copy kept…" over live data, "View live data" linked to
// the page itself, and a sample detail looked in the snapshot (a 404).
func TestLiveViewOfAFrozenIncident(t *testing.T) {
	in, _ := fixtureIncident()
	frozen := in.Now.Add(-time.Hour)
	in.SnapshotAt, in.State.Live = &frozen, true
	var buf bytes.Buffer
	if err := IncidentBody(BuildIncident(in)).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if strings.Contains(html, "the copy kept") || !strings.Contains(html, "live data") {
		t.Errorf("live view's banner: %s", between(html, `data-testid="snapshot-banner"`, "</p>"))
	}
	if !strings.Contains(html, "View the frozen copy") || strings.Contains(html, "View live data") {
		t.Errorf("live view's links: %s", between(html, `data-testid="snapshot-banner"`, "</p>"))
	}
	st := in.State
	table := BuildSampleTable(SampleTableInput{State: st, DetailBase: "/incidents/7/samples",
		Page: store.SamplePage{Total: 1, Samples: []correlate.Sample{{RequestID: "r1", Time: in.Now, Model: "chat", TotalMs: 100}}}})
	if len(table.Rows) != 1 || !strings.Contains(table.Rows[0].DetailHref, "live=1") {
		t.Errorf("a live view's sample detail link: %+v", table.Rows)
	}
	st.Live = false
	table = BuildSampleTable(SampleTableInput{State: st, DetailBase: "/incidents/7/samples",
		Page: store.SamplePage{Total: 1, Samples: []correlate.Sample{{RequestID: "r1", Time: in.Now, Model: "chat", TotalMs: 100}}}})
	if strings.Contains(table.Rows[0].DetailHref, "live=1") {
		t.Errorf("a frozen view's sample detail link: %s", table.Rows[0].DetailHref)
	}
}

// between is the part of s from the first from to the next to after it.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}

// A request is flagged against typical stage times only when they are its
// own model's: the analysis pools its figures over the affected models,
// and a chat request read "exec 422 ms, typical 128 ms — over" against
// rerank's.
func TestSampleDetailComparesWithItsOwnModelOnly(t *testing.T) {
	x := correlate.Sample{RequestID: "r1", Model: "chat", TotalMs: 1000}
	x.StagesMs[correlate.StageExec] = 422
	an := &correlate.Analysis{Stages: []correlate.StageShare{{Stage: "exec", BeforeMs: 100, DuringMs: 128}}}
	over := func(d SampleDetail) (typical string, flagged bool) {
		for _, s := range d.Stages {
			if s.Stage == "exec" {
				return s.During, s.Over
			}
		}
		return "", false
	}
	for _, c := range []struct {
		models []string
		want   bool
	}{{[]string{"chat"}, true}, {[]string{"rerank"}, false}, {[]string{"chat", "rerank"}, false}, {nil, false}} {
		an.StageModels = c.models
		typical, flagged := over(BuildSampleDetail(x, an))
		if (typical != "") != c.want || flagged != c.want {
			t.Errorf("stage figures of %v: typical %q, over %v; want compared %v", c.models, typical, flagged, c.want)
		}
	}
	if typical, _ := over(BuildSampleDetail(x, nil)); typical != "" {
		t.Errorf("no analysis: typical %q", typical)
	}
	// Analyses stored before stage_models (frozen ones are never
	// recomputed): one affected model is as good.
	an.StageModels, an.Scope.Models = nil, []string{"chat"}
	if typical, _ := over(BuildSampleDetail(x, an)); typical == "" {
		t.Error("an older analysis of chat alone: no typical times")
	}
}

// Slow-request counts re-weighted by sample_rate read "≈": 300 samples
// standing for 1,234 requests read as an exact count of 1,234.
func TestEstimatedSlowCountsSayEstimated(t *testing.T) {
	for _, c := range []struct {
		slow         int
		slowRequests float64
		want         string
	}{{300, 1234, "≈1,234"}, {1234, 1234, "1,234"}} {
		a := &correlate.Analysis{Samples: correlate.SampleSummary{Slow: c.slow, SlowRequests: c.slowRequests}}
		if got := slowCount(a.Samples.SlowRequests, slowEstimated(a)).Text; got != c.want {
			t.Errorf("%d samples for %.0f requests: %q, want %q", c.slow, c.slowRequests, got, c.want)
		}
	}
}

// A filter chosen on a scoped incident's page (a chip, a row, a target)
// stays within the incident's scope, as on its share page, unless the
// user removed the scope: the tenant chip linked to ?tenant=t1, every
// model's requests.
func TestFiltersKeepTheViewsOwnScope(t *testing.T) {
	st, err := ParseState("/incidents/5", url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	st = st.DefaultTo(correlate.Scope{Model: "chat"})
	if got := st.WithFilters(map[string]string{"tenant": "t1"}).URL(); got != "/incidents/5?model=chat&tenant=t1" {
		t.Errorf("a tenant chip on the scoped page links to %s", got)
	}
	if got := st.WithFilters(nil).URL(); got != "/incidents/5" {
		t.Errorf("clearing the filters links to %s, want the incident's own view", got)
	}
	fleet, err := ParseState("/incidents/5", url.Values{"scope": {"fleet"}})
	if err != nil {
		t.Fatal(err)
	}
	fleet = fleet.DefaultTo(correlate.Scope{Model: "chat"})
	if got := fleet.WithFilters(map[string]string{"tenant": "t1"}).URL(); got != "/incidents/5?tenant=t1" {
		t.Errorf("a tenant chip once the scope was removed links to %s", got)
	}
}

// The card's figures line keeps its figures: a long (ordinary) model name
// pushed "470 ms → 2,581 ms" off a line clipped at 50 characters.
func TestOGFiguresKeepsTheFigures(t *testing.T) {
	got := OGFigures("meta-llama-3.1-70b-instruct-awq-int4-eu-west P99", "470 ms → 2,581 ms")
	if !strings.HasSuffix(got, " 470 ms → 2,581 ms") || len([]rune(got)) > ogLineChars || !strings.HasPrefix(got, "meta-llama") {
		t.Errorf("figures line %q (%d characters)", got, len([]rune(got)))
	}
	if got := OGFigures("chat P99", "200 ms → 900 ms"); got != "chat P99 200 ms → 900 ms" {
		t.Errorf("short line %q", got)
	}
}

// The crosshair reads each series' own values on the step grid: read back
// from pixels, a 10 s scale's 80 ms read "94.3 ms" (one pixel), and two
// nodes at 31.0 % and 32.5 % both "31.4 %".
func TestTimelineSeriesCarryTheirValues(t *testing.T) {
	step := 15 * time.Second
	from := time.Date(2026, 10, 6, 7, 0, 0, 0, time.UTC)
	c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"}}
	for i := 0; i < 40; i++ {
		if i == 5 {
			continue // a missed scrape
		}
		c.Points = append(c.Points, correlate.Point{T: from.Add(time.Duration(i) * step).UnixMilli(), V: 80 + float64(i)/3})
	}
	big := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "big"}}
	for i := 0; i < 40; i++ {
		big.Points = append(big.Points, correlate.Point{T: from.Add(time.Duration(i) * step).UnixMilli(), V: 10000})
	}
	tl := BuildTimeline(TimelineInput{From: from, To: from.Add(10 * time.Minute), Step: step, Curves: []correlate.Curve{c, big}})
	var got *SVGPath
	for _, l := range tl.Lanes {
		for i := range l.Paths {
			if l.Paths[i].Title == "chat P99" {
				got = &l.Paths[i]
			}
		}
	}
	if got == nil {
		t.Fatal("no chat P99 path")
	}
	vals := strings.Split(got.Values, ",")
	if got.V0 != from.UnixMilli()/step.Milliseconds() || len(vals) != 40 || vals[0] != "80" || vals[5] != "" || vals[6] != "82" || vals[39] != "93" {
		t.Errorf("values from step %d: %q", got.V0, got.Values)
	}
	if tl.StepMs != step.Milliseconds() {
		t.Errorf("step %d", tl.StepMs)
	}
}

// A pull source that is behind says so in words: only the row's
// background marked it.
func TestPullHealthBehindInWords(t *testing.T) {
	var b bytes.Buffer
	h := HomePage{Pull: PullHealth{Sources: []PullRow{{Source: "latency", Lag: "4 min", Behind: true}, {Source: "qps", Lag: "5 s"}}}}
	if err := HomeBody(h).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `data-testid="behind"`); n != 1 {
		t.Errorf("%d rows say behind, want the one that is", n)
	}
}

// A model measured by a P95 or a mean alone (Triton without its summary)
// is drawn on the latency lane however many models there are, the mean
// in its own dash, and the legend and the lane's name say which measures
// are drawn.
func TestLatencyLaneDrawsEachModelsOwnMeasure(t *testing.T) {
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	curves := []correlate.Curve{
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "a"}, "", flat(900)),
		curve(correlate.RoleLatencyP95, correlate.LevelModel, correlate.Scope{Model: "b"}, "", flat(300)),
		curve(correlate.RoleLatencyMean, correlate.LevelModel, correlate.Scope{Model: "c"}, "", flat(200)),
		curve(correlate.RoleLatencyP99, correlate.LevelModel, correlate.Scope{Model: "d"}, "", flat(100)),
	}
	lat := BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Curves: curves, State: State{Base: "/i"}}).Lanes[0]
	titles := map[string]string{}
	for _, p := range lat.Paths {
		titles[p.Title] = p.Class
	}
	for _, want := range []string{"a P99", "b P95", "c mean", "d P99"} {
		if _, ok := titles[want]; !ok {
			t.Errorf("no %q line; drawn %v", want, titles)
		}
	}
	if c := titles["c mean"]; !strings.Contains(c, "d3") {
		t.Errorf("the mean is drawn as %q, not in its own dash", c)
	}
	var items []string
	for _, g := range lat.Legend {
		if g.Class[0] == 'k' {
			items = append(items, g.Label+"="+g.Class)
		}
	}
	if got := strings.Join(items, ","); got != "P99=k,P95=k d1,mean=k d3" {
		t.Errorf("measure legend %q, want P99, P95 and mean (no P50 is drawn)", got)
	}
	if lat.Name != "Latency P99 / P95 / mean" {
		t.Errorf("lane name %q", lat.Name)
	}
	only := BuildTimeline(TimelineInput{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Curves: curves[2:3], State: State{Base: "/i"}}).Lanes[0]
	if only.Name != "Latency mean" || len(only.Paths) != 1 {
		t.Errorf("mean only: lane %q with %d lines", only.Name, len(only.Paths))
	}
}

// A lane of replicas gridded at one says "1 replica", not "1 replicas".
func TestGridLinesSayOneReplica(t *testing.T) {
	var labels []string
	for _, g := range gridLines(2, "replicas", 45) {
		labels = append(labels, g.Label)
	}
	if len(labels) == 0 || labels[0] != "1 replica" {
		t.Errorf("grid of a 0–2 replicas lane: %q, want \"1 replica\" first", labels)
	}
	if got := withUnit(2, "replicas"); got != "2 replicas" {
		t.Errorf("withUnit(2) = %q", got)
	}
}

// Every count of samples says whose and over which window: the page shows
// the analysis' count, the heatmap's and the table's side by side, and
// "25,855 request samples" above "32,494 samples in this view" read as a
// contradiction.
func TestSampleCountsSayWhatTheyCount(t *testing.T) {
	onset := time.Now().UTC().Truncate(time.Minute).Add(-40 * time.Minute)
	end := onset.Add(30 * time.Minute)
	mk := func(id string) correlate.Sample {
		x := correlate.Sample{RequestID: id, Time: onset.Add(time.Minute), Model: "m", TotalMs: 500, SampleRate: 1}
		for i := range x.StagesMs {
			x.StagesMs[i] = math.NaN()
		}
		return x
	}
	page := store.SamplePage{Total: 6801, Samples: []correlate.Sample{mk("a"), mk("b")}}
	span := FmtSpan(onset, end)
	for _, c := range []struct {
		st   State
		want string
	}{
		{State{Base: "/incidents/1"}, "1–2 of 6,801 slow samples of all models from the onset (" + span + ")"},
		{State{Base: "/incidents/1", Scope: correlate.Scope{Model: "m"}}, "1–2 of 6,801 slow samples of m from the onset (" + span + ")"},
		{State{Base: "/incidents/1", Scope: correlate.Scope{Model: "m", Tenant: "t"}}, "1–2 of 6,801 slow samples of m matching the filters from the onset (" + span + ")"},
		{State{Base: "/incidents/1", From: onset, To: end}, "1–2 of 6,801 slow samples of all models in this view (" + span + ")"},
		{State{Base: "/incidents/1", Tab: "baseline", Status: "5xx"}, "1–2 of 6,801 other samples of all models matching the filters from the onset (" + span + ")"},
	} {
		tb := BuildSampleTable(SampleTableInput{Page: page, State: c.st, WindowTotal: 6801, SlowMs: map[string]float64{"m": 300},
			DetailBase: "/incidents/1/samples", Ref: onset, To: end})
		if tb.Range != c.want {
			t.Errorf("%+v: range %q, want %q", c.st, tb.Range, c.want)
		}
	}
	// The heatmap's count: the view's window, and whose samples.
	from, to := onset.Add(-30*time.Minute), end.Add(10*time.Minute)
	for _, c := range []struct {
		st   State
		want string
	}{
		{State{Base: "/incidents/1"}, "2 request samples of all models in this view (" + FmtSpan(from, to) + ")"},
		// the heatmap ignores the status filter: only the scope narrows it
		{State{Base: "/incidents/1", Scope: correlate.Scope{Model: "m"}, Status: "5xx"}, "2 request samples of m in this view (" + FmtSpan(from, to) + ")"},
	} {
		h := BuildHeatmap(page.Samples, from, to, 300, c.st)
		var b strings.Builder
		if err := HeatmapView(h).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%+v: heatmap lacks %q", c.st, c.want)
		}
	}
	// Windows across midnight carry their dates.
	day := time.Date(2026, 3, 4, 23, 30, 0, 0, time.UTC)
	if got := FmtSpan(day, day.Add(time.Hour)); got != "2026-03-04 23:30 – 2026-03-05 00:30 UTC" {
		t.Errorf("span across midnight: %q", got)
	}
	if got := FmtSpan(day.Add(-time.Hour), day.Add(30*time.Minute)); got != "22:30–00:00 UTC" {
		t.Errorf("span to midnight: %q", got)
	}
}

// A P99 pinned at its histogram's top bucket (histogram_quantile answers
// the highest finite bound for a quantile in +Inf) was at least that: the
// page and the export say "≥ 10 s", "at least ×25", and why, once per
// model.
func TestIncidentPageSaysAtLeastAtTheCeiling(t *testing.T) {
	in, a := fixtureIncident()
	peakAt := in.Now.Add(-10 * time.Minute)
	a.Impact = []correlate.Impact{
		{Model: "chat", Quantile: "P99", BaselineP99Ms: 400, DuringP99Ms: 10000, PeakP99Ms: 10000, PeakAt: &peakAt, NowP99Ms: 10000, NowAt: &in.Now, Rise: 25, CeilingMs: 10000, Status: "ongoing"},
		{Model: "embed", Quantile: "P99", BaselineP99Ms: 100, DuringP99Ms: 300, PeakP99Ms: 420, PeakAt: &peakAt, Rise: 3, Status: "ongoing"},
	}
	in.Analysis = &a
	p := BuildIncident(in)
	var buf bytes.Buffer
	if err := IncidentBody(p).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<b data-testid="peak">≥ 10,000 ms</b>`, `>at least ×25</span>`, `<td class="num">≥ 10,000 ms <span`,
		`data-testid="ceiling-note">the P99 reached its histogram&#39;s top bucket, so the true value is higher</div>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page: no %s", want)
		}
	}
	if n := strings.Count(page, "top bucket"); n != 1 {
		t.Errorf("page says the top bucket %d times; want once, for chat", n)
	}
	if strings.Contains(page, "≥ 420") || strings.Contains(page, "at least ×3") {
		t.Error("embed's measured figures read as bounds")
	}
	md := Markdown(MarkdownInput{Incident: in.Incident, Analysis: &a, Version: 2, Now: in.Now})
	if !strings.Contains(md, "- **Peak:** chat P99 ≥ 10,000 ms at") || !strings.Contains(md, "| chat | P99 | 400 ms | ≥ 10,000 ms at 07:45 UTC | ≥ 10,000 ms |") ||
		!strings.Contains(md, "so the true value is higher") {
		t.Errorf("export:\n%s", md)
	}
}
