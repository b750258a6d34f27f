package web_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

func recordedSpike(model string, start time.Time, d time.Duration) correlate.Spike {
	return correlate.Spike{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model},
		Start: start, End: start.Add(d), Onset: start, PeakTime: start.Add(d / 2), PeakValue: 900, Baseline: 100,
		Direction: correlate.Up, DetectedAt: start, Severity: "page"}
}

func exploreURL(from, to time.Time, filter string) string {
	return fmt.Sprintf("/explore?from=%s&to=%s%s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), filter)
}

// The explorer's spike bands are the filtered scope's, whatever other
// models do: it read the 200 newest spikes of every model and then
// filtered by model only, so a quiet model's spike vanished behind a
// noisy one's, and a version, replica or node filter of one model drew
// another model's spike.
func TestExploreSpikeBandsOfTheFilteredScope(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	from, to := testNow.Add(-3*time.Hour), testNow
	if _, _, _, err := e.st.RecordSpike(ctx, "latency_p99|model|quiet", recordedSpike("quiet", from.Add(10*time.Minute), 5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 210; i++ {
		sp := recordedSpike("noisy", from.Add(30*time.Minute+time.Duration(i)*30*time.Second), 10*time.Second)
		sp.Level, sp.Scope.Replica = correlate.LevelReplica, fmt.Sprintf("noisy-%d", i)
		if _, _, _, err := e.st.RecordSpike(ctx, fmt.Sprintf("latency_p99|replica|noisy-%d", i), sp); err != nil {
			t.Fatal(err)
		}
	}
	w := e.browser()
	w.login(e.read)
	if n := w.get(exploreURL(from, to, "&model=quiet")).doc.Find(".tl-band").Length(); n != 1 {
		t.Errorf("model=quiet: %d bands, want its one spike", n)
	}
	// A replica of quiet: quiet's model-level spike, none of noisy's.
	p := w.get(exploreURL(from, to, "&model=quiet&replica=quiet-1"))
	if n := p.doc.Find(".tl-band").Length(); n != 1 {
		t.Errorf("model=quiet&replica=quiet-1: %d bands, want quiet's spike", n)
	}
	// A replica of noisy without its model: its own spike only.
	p = w.get(exploreURL(from, to, "&replica=noisy-3"))
	if n := p.doc.Find(".tl-band").Length(); n != 1 {
		t.Errorf("replica=noisy-3: %d bands, want its own spike", n)
	}
	if txt := p.testid("timeline-spikes").Text(); !strings.Contains(txt, from.Add(31*time.Minute+30*time.Second).UTC().Format("15:04:05")) {
		t.Errorf("the spikes in words: %q", txt)
	}
}

// Twelve bands at most, the newest (the live edge), with a note saying how
// many earlier ones are not drawn; a spike that began before the window
// shows when zoomed into it.
func TestExploreSpikeBandsNewestAndOverlapping(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	from, to := testNow.Add(-3*time.Hour), testNow
	var last time.Time
	for i := 0; i < 16; i++ {
		last = from.Add(time.Duration(i)*10*time.Minute + 5*time.Minute)
		if _, _, _, err := e.st.RecordSpike(ctx, "latency_p99|model|chat", recordedSpike("chat", last, 2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	w := e.browser()
	w.login(e.read)
	p := w.get(exploreURL(from, to, ""))
	bands := p.doc.Find(".tl-band")
	lastTitle, _ := bands.Last().Attr("title")
	if bands.Length() != 12 || !strings.HasPrefix(lastTitle, "spike "+last.UTC().Format("15:04:05")) {
		t.Errorf("%d bands, the last %q; want 12 ending with the newest spike at %s", bands.Length(), lastTitle, last.UTC().Format("15:04:05"))
	}
	if note := p.testid("bands-left-out").Text(); !strings.Contains(note, "4 earlier") {
		t.Errorf("left-out note %q", note)
	}

	long := testNow.Add(-2 * time.Hour).Add(-30 * time.Second)
	if _, _, _, err := e.st.RecordSpike(ctx, "latency_p99|model|embed", recordedSpike("embed", long, time.Hour)); err != nil {
		t.Fatal(err)
	}
	zf, zt := long.Add(20*time.Minute), long.Add(40*time.Minute)
	if n := w.get(exploreURL(zf, zt, "&model=embed")).doc.Find(".tl-band").Length(); n != 1 {
		t.Errorf("zoomed inside embed's hour-long spike: %d bands", n)
	}
}

// The window's fields are labelled UTC and say UTC: a server whose zone
// is not UTC wrote its own (2026-12-06T14:09:00+05:30) under "From (UTC)".
func TestExploreWindowFieldsInUTC(t *testing.T) {
	ist := time.FixedZone("IST", 5*3600+1800)
	e := newAPIEnvAt(t, func() time.Time { return testNow.In(ist) })
	w := e.browser()
	w.login(e.read)
	p := w.get("/explore")
	if p.status != 200 {
		t.Fatalf("%d %s", p.status, p.body)
	}
	// The default (live) window leaves the fields empty, its bounds as
	// their placeholders (TestExploreFilterKeepsTheLiveWindow); a window
	// the URL names fills them. Both in UTC.
	to := testNow.Truncate(time.Minute).UTC()
	for name, want := range map[string]string{"from": to.Add(-3 * time.Hour).Format(time.RFC3339), "to": to.Format(time.RFC3339)} {
		if got, _ := p.doc.Find(`input[name="` + name + `"]`).Attr("placeholder"); got != want {
			t.Errorf("%s field's placeholder %q, want %q", name, got, want)
		}
	}
	from := testNow.Add(-time.Hour).In(ist)
	p = w.get("/explore?from=" + url.QueryEscape(from.Format(time.RFC3339)))
	for name, want := range map[string]string{"from": from.UTC().Format(time.RFC3339), "to": from.Add(3 * time.Hour).UTC().Format(time.RFC3339)} {
		if got, _ := p.doc.Find(`input[name="` + name + `"]`).Attr("value"); got != want {
			t.Errorf("%s field %q, want %q", name, got, want)
		}
	}
}
