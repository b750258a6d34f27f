package web_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
)

// The home page tells each incident's spike, not the data window it was
// opened over (issue 17, item 7): the onset, the peak with its time and
// model, how long it lasted, and — for an open incident whose curves stop
// before now — since when no data has arrived. Without an analysis the
// spikes the detector attached say it; with neither, the row says so.
func TestUIHomeShowsTheSpike(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	// A time of day, with its date when it is not today's (the suite runs
	// at any hour and date).
	clock := func(at time.Time) string {
		if at.UTC().Format("2006-01-02") != testNow.UTC().Format("2006-01-02") {
			return at.UTC().Format("2006-01-02 15:04 UTC")
		}
		return at.UTC().Format("15:04 UTC")
	}
	p99 := func(model string, from, to time.Time, v func(time.Time) float64) correlate.Curve {
		c := correlate.Curve{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model}}
		for at := from; at.Before(to); at = at.Add(15 * time.Second) {
			c.Points = append(c.Points, correlate.Point{T: at.UnixMilli(), V: v(at)})
		}
		return c
	}
	// chat: data up to now, a spike that recovered. rank: data stopped
	// three hours ago, in the middle of its spike.
	chatOnset := testNow.Add(-2*time.Hour + 45*time.Second)
	chatPeak, chatBack := chatOnset.Add(4*time.Minute), chatOnset.Add(51*time.Minute)
	rankOnset := testNow.Add(-4*time.Hour - 30*time.Minute)
	rankLast := testNow.Add(-3*time.Hour - 15*time.Second)
	storetest.WriteCurves(t, e.st, []correlate.Curve{
		p99("chat", testNow.Add(-4*time.Hour), testNow, func(time.Time) float64 { return 100 }),
		p99("rank", testNow.Add(-6*time.Hour), rankLast.Add(time.Second), func(time.Time) float64 { return 80 }),
	})
	open := func(title, model string, start time.Time, end *time.Time) int64 {
		in, err := e.st.CreateIncident(ctx, store.NewIncident{Title: title, Start: start, End: end, Scope: correlate.Scope{Model: model}})
		if err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	analyse := func(id int64, a correlate.Analysis) {
		v, err := e.st.StartAnalysis(ctx, id, "test")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(a)
		if err := e.st.FinishAnalysis(ctx, id, v, body, ""); err != nil {
			t.Fatal(err)
		}
	}
	chatEnd := testNow.Add(-30 * time.Minute)
	chatID := open("chat slow", "chat", chatOnset.Add(-90*time.Minute), &chatEnd)
	analyse(chatID, correlate.Analysis{Onset: &chatOnset,
		Headline: correlate.Headline{Model: "chat", Title: "P99 latency up ×9.0 on chat"},
		Impact: []correlate.Impact{{Model: "chat", BaselineP99Ms: 100, DuringP99Ms: 700, PeakP99Ms: 1307, PeakAt: &chatPeak, Rise: 7,
			Status: "recovered", RecoveredAt: &chatBack}}})
	rankID := open("rank slow", "rank", rankOnset.Add(-90*time.Minute), nil)
	analyse(rankID, correlate.Analysis{Onset: &rankOnset,
		Headline: correlate.Headline{Model: "rank", Title: "P99 latency up ×4.0 on rank"},
		Impact:   []correlate.Impact{{Model: "rank", BaselineP99Ms: 80, DuringP99Ms: 320, PeakP99Ms: 410, PeakAt: &rankLast, Rise: 4, Status: "ongoing"}}})
	// No analysis yet; the detector attached a spike of chat's P99.
	spikeOnset := testNow.Add(-20 * time.Minute)
	spikeID := open("detector: chat", "chat", spikeOnset.Add(-time.Hour), nil)
	sid, _, _, err := e.st.RecordSpike(ctx, "latency_p99|model|chat", correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
		Scope: correlate.Scope{Model: "chat"}, Start: spikeOnset, End: testNow.Add(-time.Minute), Onset: spikeOnset, Ongoing: true,
		PeakTime: spikeOnset.Add(5 * time.Minute), PeakValue: 640, Baseline: 95, Direction: correlate.Up, DetectedAt: spikeOnset, Severity: "page"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.AttachSpike(ctx, sid, spikeID); err != nil {
		t.Fatal(err)
	}
	bareID := open("manual: something", "", testNow.Add(-time.Hour), nil)
	// A spike nobody attached (the incident was opened by hand): it links
	// to the incident of its model whose window holds its onset.
	if _, _, _, err := e.st.RecordSpike(ctx, "latency_p99|model|chat", correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
		Scope: correlate.Scope{Model: "chat"}, Start: chatOnset, End: chatBack, Onset: chatOnset, PeakTime: chatPeak, PeakValue: 1300,
		Baseline: 100, Direction: correlate.Up, DetectedAt: chatOnset, Severity: "page"}); err != nil {
		t.Fatal(err)
	}

	w := e.browser()
	w.login(e.read)
	home := w.get("/")
	rows := map[string]*goquery.Selection{}
	home.testid("incident-row").Each(func(_ int, s *goquery.Selection) { rows[strings.TrimSpace(s.Find("td").First().Text())] = s })
	cell := func(id int64, testid string) string {
		r := rows[strconv.FormatInt(id, 10)]
		if r == nil {
			t.Fatalf("no row for incident %d in %s", id, home.testid("open-incidents").Text())
		}
		return strings.Join(strings.Fields(r.Find(`[data-testid="`+testid+`"]`).Text()), " ")
	}

	// chat: the onset and the peak, not the window; recovered after 50 min.
	if got := cell(chatID, "spike-onset"); !strings.Contains(got, chatOnset.UTC().Format("15:04:05")) || strings.Contains(got, chatOnset.Add(-90*time.Minute).UTC().Format("15:04:05")) {
		t.Errorf("chat onset %q, want %s", got, chatOnset.UTC().Format("15:04:05"))
	}
	if got := cell(chatID, "spike-peak"); got != "P99 1,307 ms at "+clock(chatPeak)+" on chat (baseline 100 ms)" {
		t.Errorf("chat peak %q", got)
	}
	if got := cell(chatID, "spike-duration"); got != "51 min, recovered at "+clock(chatBack) {
		t.Errorf("chat duration %q", got)
	}
	if got := cell(chatID, "no-data"); got != "" {
		t.Errorf("chat has data up to now, yet %q", got)
	}
	if title := rows[strconv.FormatInt(chatID, 10)].Find("td a").First().Text(); title != "P99 latency up ×9.0 on chat" {
		t.Errorf("chat's title %q, want the analysis' headline", title)
	}
	// rank: the data stopped mid-spike.
	if got := cell(rankID, "no-data"); !strings.HasPrefix(got, "no data since "+clock(rankLast)) || !strings.Contains(got, "3 h ago") {
		t.Errorf("rank: %q, want no data since %s", got, clock(rankLast))
	}
	if got := cell(rankID, "spike-duration"); !strings.HasPrefix(got, "at least 1 h 29 min, ongoing when the data stopped") {
		t.Errorf("rank duration %q", got)
	}
	// The attached spike, without an analysis.
	if got := cell(spikeID, "spike-peak"); got != "P99 640 ms at "+clock(spikeOnset.Add(5*time.Minute))+" on chat (baseline 95 ms)" {
		t.Errorf("spike-only peak %q", got)
	}
	if got := cell(spikeID, "spike-duration"); got != "20 min so far" {
		t.Errorf("spike-only duration %q", got)
	}
	// Nothing known: the row says so rather than passing the window off as the spike.
	if got := cell(bareID, "spike-window"); !strings.Contains(got, "no spike located yet") {
		t.Errorf("bare incident %q", got)
	}
	links := map[string]string{}
	home.testid("recent-spikes").Find("tbody tr").Each(func(_ int, r *goquery.Selection) {
		href, _ := r.Find("td").Last().Find("a").Attr("href")
		links[strings.TrimSpace(r.Find("td").Eq(2).Text())] = href
	})
	if links["1,300 ms"] != "/incidents/"+strconv.FormatInt(chatID, 10) || links["640 ms"] != "/incidents/"+strconv.FormatInt(spikeID, 10) {
		t.Errorf("spikes link to %v; want the 1,300 ms one to #%d (its window), the 640 ms one to #%d (attached)", links, chatID, spikeID)
	}
	// The recorded spike's values carry their unit.
	if got := home.testid("recent-spikes").Text(); !strings.Contains(got, "640 ms") || !strings.Contains(got, "95 ms") {
		t.Errorf("recent spikes without units: %s", strings.Join(strings.Fields(got), " "))
	}
}

// The home page's empty states say what this server does: with the
// detector off, "the detector has recorded no spike yet" (it judges the
// curves as the pull brings them) was false, and so was "incidents open
// from the spike detector" where it records spikes without opening any.
func TestUIHomeSaysWhetherTheDetectorRuns(t *testing.T) {
	for _, c := range []struct {
		name      string
		on, opens bool
		spikes    string // in the recent-spikes empty state
		open      string // in the open-incidents empty state
		notOpen   string
	}{
		{"off", false, false, "detector is off", "Alertmanager", "from the spike detector"},
		{"records only", true, false, "has recorded no spike", "Alertmanager", "from the spike detector"},
		{"opens", true, true, "has recorded no spike", "spike detector", ""},
	} {
		e := newAPIEnv(t, func(cfg *web.Config) { cfg.DetectorOn, cfg.DetectorOpens = c.on, c.opens })
		b := e.browser()
		b.login(e.read)
		home := b.get("/")
		spikes, open := home.testid("recent-spikes").Text(), home.testid("open-incidents").Text()
		if !strings.Contains(spikes, c.spikes) {
			t.Errorf("%s: recent spikes say %q, want %q", c.name, spikes, c.spikes)
		}
		if !strings.Contains(open, c.open) || c.notOpen != "" && strings.Contains(open, c.notOpen) {
			t.Errorf("%s: open incidents say %q", c.name, open)
		}
	}
}

// A peak at its histogram's top bucket is a lower bound on the home page
// too: the incident rows (from an analysis whose impact carries
// ceiling_ms, or from the detector's spike alone) and the recent spikes
// say "≥ 10,000 ms"; a measured peak says its value.
func TestUIHomeSaysAtLeastAtTheCeiling(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	onset := testNow.Add(-20 * time.Minute)
	peakAt := onset.Add(2 * time.Minute)
	open := func(title, model string) int64 {
		in, err := e.st.CreateIncident(ctx, store.NewIncident{Title: title, Start: onset.Add(-time.Hour), Scope: correlate.Scope{Model: model}})
		if err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	record := func(model string, incident int64, peak float64, capped bool) {
		id, _, _, err := e.st.RecordSpike(ctx, "latency_p99|model|"+model, correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
			Scope: correlate.Scope{Model: model}, Start: onset, End: testNow.Add(-time.Minute), Onset: onset, Ongoing: true,
			PeakTime: peakAt, PeakValue: peak, PeakAtCeiling: capped, Baseline: 400, Direction: correlate.Up, DetectedAt: onset, Severity: "page"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.AttachSpike(ctx, id, incident); err != nil {
			t.Fatal(err)
		}
	}
	capped, measured, analysed := open("detector: chat", "chat"), open("detector: rank", "rank"), open("timeouts", "embed")
	record("chat", capped, 10000, true)
	record("rank", measured, 9500, false)
	v, err := e.st.StartAnalysis(ctx, analysed, "test")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(correlate.Analysis{Onset: &onset, Headline: correlate.Headline{Model: "embed", Title: "P99 latency up at least ×25 on embed"},
		Impact: []correlate.Impact{{Model: "embed", BaselineP99Ms: 400, DuringP99Ms: 10000, PeakP99Ms: 10000, PeakAt: &peakAt, Rise: 25,
			Status: "ongoing", CeilingMs: 10000}}})
	if err := e.st.FinishAnalysis(ctx, analysed, v, body, ""); err != nil {
		t.Fatal(err)
	}

	w := e.browser()
	w.login(e.read)
	home := w.get("/")
	peaks := map[string]string{}
	home.testid("incident-row").Each(func(_ int, s *goquery.Selection) {
		peaks[strings.TrimSpace(s.Find("td").First().Text())] = strings.Join(strings.Fields(s.Find(`[data-testid="spike-peak"]`).Text()), " ")
	})
	for id, want := range map[int64]string{capped: "P99 ≥ 10,000 ms", analysed: "P99 ≥ 10,000 ms", measured: "P99 9,500 ms"} {
		if got := peaks[strconv.FormatInt(id, 10)]; !strings.HasPrefix(got, want+" at ") {
			t.Errorf("incident %d's peak %q, want %q first", id, got, want)
		}
	}
	var spikePeaks []string
	home.testid("recent-spikes").Find("tbody tr").Each(func(_ int, r *goquery.Selection) {
		spikePeaks = append(spikePeaks, strings.TrimSpace(r.Find("td").Eq(2).Text()))
	})
	slices.Sort(spikePeaks)
	if want := []string{"9,500 ms", "≥ 10,000 ms"}; !slices.Equal(spikePeaks, want) {
		t.Errorf("recent spikes' peaks %q, want %q", spikePeaks, want)
	}
}
