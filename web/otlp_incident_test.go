package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// analysisOf returns the stack's newest ready analysis of an incident.
func analysisOf(t *testing.T, s *stacktest.Stack, id int64) wire.Result {
	t.Helper()
	rec, err := s.Store.LatestReadyAnalysis(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var a wire.Result
	if err := json.Unmarshal(rec.Result, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// A simulated downstream incident, replayed twice through the whole stack:
// once with its samples posted to the sample API, once re-emitted as the
// spans a gateway and model servers would export, sent by the official
// OTLP/HTTP exporter, plus a Grafana-style annotation from a CD step. The
// OTel-fed incident's stage attribution and concentration match the
// JSON-fed one's; its downstream cause names the dependency from the
// samples (peer.service), which the JSON samples never said; and the
// incident page in Chromium shows the cause, the dependency and the
// annotation on the timeline.
func TestOTelFedIncidentOnThePage(t *testing.T) {
	if testing.Short() {
		t.Skip("two bundle replays and a browser: not in -short")
	}
	opts := sim.Options{Seed: 5, Scenario: sim.Downstream, Duration: 2 * time.Hour, Onset: 80 * time.Minute,
		Models: 4, ReplicasPerModel: 2, Nodes: 3, Tenants: 4, TrafficScale: 0.5}
	viaJSON := stacktest.Start(t, stacktest.SimBundle(t, "sim-downstream", opts), stacktest.Options{})
	b := stacktest.SimBundle(t, "sim-downstream-otel", opts)
	viaOTel := stacktest.Start(t, b, stacktest.Options{SamplesAsTraces: true})
	var caller string
	for m := range b.Dependencies {
		if caller == "" || m < caller {
			caller = m
		}
	}
	note := fmt.Sprintf(`{"time":%d,"tags":["model:%s","source:github-actions"],"text":"bumped the vector-db client pool"}`,
		b.Truth.Onset.Add(-4*time.Minute).UnixMilli(), caller)
	var added wire.AnnotationResult
	viaOTel.Post(t, "/api/annotations", "application/json", []byte(note), &added)
	if added.Message != "Annotation added" {
		t.Fatalf("annotation answer %+v", added)
	}

	jid, oid := viaJSON.Incident(t, "downstream via JSON"), viaOTel.Incident(t, "downstream via OTel")
	ja, oa := analysisOf(t, viaJSON, jid), analysisOf(t, viaOTel, oid)

	// Stage attribution: the same stages, in the same order, about the same size.
	if len(oa.Stages) == 0 || len(oa.Stages) != len(ja.Stages) {
		t.Fatalf("stages: OTel %d, JSON %d", len(oa.Stages), len(ja.Stages))
	}
	for i := range ja.Stages {
		j, o := ja.Stages[i], oa.Stages[i]
		if j.Stage != o.Stage || math.Abs(j.DeltaMs-o.DeltaMs) > 0.5+0.01*math.Abs(j.DeltaMs) {
			t.Errorf("stage %d: OTel %s %+.1f ms, JSON %s %+.1f ms", i, o.Stage, o.DeltaMs, j.Stage, j.DeltaMs)
		}
	}
	grew := false
	for _, st := range oa.Stages {
		grew = grew || (st.Stage == "downstream" && st.DeltaLoMs > 0)
	}
	if !grew {
		t.Errorf("the downstream stage did not grow clearly: %+v", oa.Stages)
	}
	// Concentration: the same leading rows over the same dimensions (the
	// OTel-fed samples also carry the dependency, which may join a row).
	if len(oa.Concentration) == 0 || len(ja.Concentration) == 0 {
		t.Fatalf("concentration: OTel %d rows, JSON %d", len(oa.Concentration), len(ja.Concentration))
	}
	for i := 0; i < min(3, len(ja.Concentration), len(oa.Concentration)); i++ {
		j, o := ja.Concentration[i], oa.Concentration[i]
		for k, v := range j.Dims {
			if o.Dims[k] != v && o.Also[k] != v {
				t.Errorf("concentration row %d: OTel %s, JSON %s", i, o.Label, j.Label)
			}
		}
		if math.Abs(j.SelectionPct-o.SelectionPct) > 1 {
			t.Errorf("row %d selection: OTel %.1f%%, JSON %.1f%%", i, o.SelectionPct, j.SelectionPct)
		}
	}
	// The downstream cause names the dependency from the samples.
	var named bool
	for _, c := range oa.Causes {
		if c.Category != "downstream" {
			continue
		}
		for _, ev := range c.Evidence {
			named = named || strings.Contains(ev.Summary, "vector-db") && strings.Contains(ev.Summary, "from samples")
		}
		if c.Target.Dependency != "vector-db" {
			t.Errorf("downstream cause targets %+v, want dependency vector-db", c.Target)
		}
	}
	if !named {
		t.Errorf("no downstream evidence names vector-db from samples: %+v", oa.Causes)
	}
	var fromSamples int
	if err := viaOTel.Pool.QueryRow(context.Background(), `SELECT count(*) FROM samples WHERE dependency = 'vector-db'`).Scan(&fromSamples); err != nil || fromSamples == 0 {
		t.Errorf("stored samples naming vector-db: %d (%v)", fromSamples, err)
	}
	if _, err := viaOTel.Store.Samples(context.Background(), store.SampleFilter{From: b.Start, To: b.End, Limit: 1}); err != nil {
		t.Fatal(err)
	}

	// The page, in a browser.
	want := viaOTel.TopCause(t, oid)
	ctx := browser(t)
	page := fmt.Sprintf("%s/incidents/%d", viaOTel.URL, oid)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`)),
		chromedp.SendKeys(chromedp.ID("token"), viaOTel.Token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(),
	), "sign in")
	if cat := evalString(t, ctx, `document.querySelector('[data-testid=cause]').dataset.category`); cat != want {
		t.Errorf("first cause on the page is %q, the analysis' top cause is %q", cat, want)
	}
	text := evalString(t, ctx, `document.body.innerText`)
	for _, s := range []string{"vector-db", "downstream"} {
		if !strings.Contains(text, s) {
			t.Errorf("the incident page does not mention %q", s)
		}
	}
	marks := evalString(t, ctx, `[...document.querySelectorAll('[title]')].map(e => e.getAttribute('title')).join('\n')`)
	if !strings.Contains(marks, "bumped the vector-db client pool") {
		t.Errorf("the annotation is not on the timeline; event titles:\n%s", marks)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir(t), "otel-downstream-incident.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
