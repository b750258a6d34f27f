package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// TestBrowserStoryAcrossScenarios replays each of the eight demo scenarios
// (the demo's -small fleet) through the real stack and reads the incident
// page in Chromium the way an on-call engineer would (issue 17):
//   - the title names the model whose P99 rose most, and the header shows
//     that model's peak;
//   - the checklist's samples step names (and links) the concentration row
//     the top cause rests on, and that row is on the page and clickable;
//   - every count of slow requests on the page agrees with the analysis'
//     one count (or its per-model split);
//   - every text element meets WCAG AA contrast, legends are ≥ 12 px and
//     event markers have accessible names;
//   - no page logs a console error or fails a request.
func TestBrowserStoryAcrossScenarios(t *testing.T) {
	for i, sc := range sim.Scenarios {
		if sc == sim.None {
			continue
		}
		// -short (make test's pass under -race) keeps the page, phone and
		// console checks on two scenarios: capacity and cold start, the
		// two whose stories were the hardest to tell.
		if testing.Short() && sc != sim.Capacity && sc != sim.ColdStart {
			continue
		}
		t.Run(string(sc), func(t *testing.T) {
			// A browser per scenario: its deadline is per browser.
			ctx := browser(t)
			watch := watchConsole(t, ctx)
			// Three models of three replicas: enough for the slow requests
			// to concentrate somewhere in most scenarios, so the samples
			// step has a row to name.
			b := stacktest.SimBundle(t, "story-"+string(sc), sim.Options{Seed: int64(1 + i), Scenario: sc, Confounders: true,
				Duration: 90 * time.Minute, Onset: 60 * time.Minute, Models: 3, ReplicasPerModel: 3, Nodes: 4, Tenants: 4, TrafficScale: 0.7})
			s := stacktest.Start(t, b, stacktest.Options{})
			id := s.Incident(t, "P99 up: "+string(sc))
			a := readyAnalysis(t, s, id)
			must(t, chromedp.Do(ctx, clearCookies(), chromedp.Navigate(s.URL+"/login"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`))), "login page")
			checkPageHealth(t, ctx, watch, "login", "")
			must(t, chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.ID("token"), s.Token),
				chromedp.Submit(chromedp.ID("token")),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`)),
			), "sign in")
			checkPageHealth(t, ctx, watch, "home", "")
			checkHome(t, ctx, "open-incidents", id, a)
			page := fmt.Sprintf("%s/incidents/%d", s.URL, id)
			must(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`))), "incident")
			if n := evalString(t, ctx, `String(document.documentElement.outerHTML.length)`); len(n) > 0 {
				t.Logf("incident page HTML before scrolling: %s characters", n)
			}
			must(t, chromedp.Do(ctx, revealRegion()), "scroll to the timeline")
			checkStory(t, ctx, a)
			checkBrush(t, ctx)
			checkPageHealth(t, ctx, watch, "incident", "incident")
			checkPhone(t, ctx, page)
			checkPageHealth(t, ctx, watch, "incident at 390 px", "incident")

			// The explorer, a sample's own page and the share link.
			explore := fmt.Sprintf("%s/explore?from=%s&to=%s", s.URL, b.Start.Format(time.RFC3339), b.End.Format(time.RFC3339))
			must(t, chromedp.Do(ctx, chromedp.Navigate(explore), chromedp.WaitVisible(chromedp.CSS(`[data-testid=timeline]`))), "explore")
			checkPageHealth(t, ctx, watch, "explore", "")
			must(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)), revealRegion()), "incident again")
			if href := evalString(t, ctx, `document.querySelector('[data-testid=sample-link]')?.getAttribute('href') || ''`); href != "" {
				must(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+href), chromedp.WaitVisible(chromedp.CSS(`[data-testid=sample-detail-body]`))), "sample detail")
				checkPageHealth(t, ctx, watch, "sample detail", "")
				must(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`))), "incident again")
			}
			must(t, chromedp.Do(ctx,
				chromedp.Click(chromedp.CSS(`[data-testid=share]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid=share-url]`)),
			), "create share link")
			shareURL, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`[data-testid=share-url]`)))
			if err != nil {
				t.Fatal(err)
			}
			must(t, chromedp.Do(ctx, clearCookies(), chromedp.Navigate(shareURL), chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)), revealRegion()), "share page")
			checkStory(t, ctx, a)
			checkPageHealth(t, ctx, watch, "share", "incident")
			checkShareExport(t, shareURL, a)

			// Resolve asks first: dismissed, nothing happens; accepted, the
			// incident is resolved and the home page lists it, with its
			// spike, under "Recently resolved".
			must(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/login"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`)),
				chromedp.SendKeys(chromedp.ID("token"), s.Token), chromedp.Submit(chromedp.ID("token")),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`)),
				chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-testid=resolve]`))), "sign in again")
			asked := evalString(t, ctx, `(() => { let asked = ''; window.confirm = m => { asked = m; return false; };
				document.querySelector('[data-testid=resolve]').click(); return asked; })()`)
			must(t, chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)), "settle")
			if st := evalString(t, ctx, `document.querySelector('[data-testid=status]').textContent`); !strings.Contains(asked, "Resolve this incident?") || st != "open" {
				t.Errorf("Resolve, dismissed: asked %q, status %q", asked, st)
			}
			must(t, chromedp.Do(ctx,
				// The click submits the form; it must not run inside the
				// evaluation, which the navigation would cut short.
				chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; setTimeout(() => document.querySelector('[data-testid=resolve]').click(), 0)`),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid=status].resolved`)),
			), "resolve, confirmed")
			must(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=recent-incidents]`))), "home after resolving")
			checkHome(t, ctx, "recent-incidents", id, a)
			checkPageHealth(t, ctx, watch, "resolve and home", "")
		})
	}
}

// checkHome reads the incident's row on the home page (list is the
// card's testid): it tells the spike (the analysis' onset and the hardest
// hit model's peak), not the data window.
func checkHome(t *testing.T, ctx context.Context, list string, id int64, a correlate.Analysis) {
	t.Helper()
	row := fmt.Sprintf(`document.querySelector('[data-testid=%s] a[href="/incidents/%d"]')?.closest('[data-testid=incident-row]')`, list, id)
	onset := evalString(t, ctx, row+`?.querySelector('[data-testid=spike-onset]')?.textContent || ''`)
	peak := evalString(t, ctx, row+`?.querySelector('[data-testid=spike-peak]')?.textContent || ''`)
	if a.Onset != nil && !strings.Contains(onset, a.Onset.UTC().Format("15:04:05")) {
		t.Errorf("home (%s): onset %q, the analysis' onset is %s", list, onset, a.Onset.UTC().Format("15:04:05"))
	}
	if len(a.Impact) > 0 {
		im := a.Impact[0]
		if want := "P99 " + views.FmtMs(math.Max(im.PeakP99Ms, im.DuringP99Ms)); !strings.HasPrefix(strings.TrimSpace(peak), want) || !strings.Contains(peak, im.Model) {
			t.Errorf("home (%s): peak %q, the analysis' peak is %s on %s", list, peak, want, im.Model)
		}
	}
}

// checkShareExport reads the Markdown export from a share link, without a
// session, and holds it to the analysis: the share link, the peak, the
// recovery and the duration, the chart, every cause (ruled out ones with
// their reasons), every event a cause rests on, and the pool of a
// capacity cause.
func checkShareExport(t *testing.T, shareURL string, a correlate.Analysis) {
	t.Helper()
	res, err := http.Get(shareURL + "/export.md")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	md := string(raw)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("share export: %d %s", res.StatusCode, md)
	}
	want := []string{"<" + shareURL + ">", "](" + shareURL + "/og.png)"}
	if len(a.Impact) > 0 {
		im := a.Impact[0]
		want = append(want, "- **Peak:** ", " P99 "+views.FmtMs(math.Max(im.PeakP99Ms, im.DuringP99Ms))+" at ", "- **Recovered:** ")
		if a.Onset != nil && (im.RecoveredAt != nil || im.NowAt != nil) {
			want = append(want, "- **Duration:** ")
		}
	}
	scored := map[correlate.Category]bool{}
	for i, c := range a.Causes {
		scored[c.Category] = true
		want = append(want, fmt.Sprintf("### %d. %s — score %.2f", i+1, views.CategoryLabel(string(c.Category)), c.Score))
		for _, p := range views.PoolFacts(&a, c) {
			// The page's line (checkStory holds it to the events), up to
			// where Markdown escapes start.
			lim, _, _ := strings.Cut(p.Limits, "(")
			lim, _, _ = strings.Cut(lim, "_")
			want = append(want, "Pool of "+p.Model+":", "- Autoscaler limits: "+lim)
		}
	}
	for _, cat := range correlate.Categories {
		if !scored[cat] {
			want = append(want, "- "+views.CategoryLabel(string(cat))+": ")
		}
	}
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("share export lacks %q", w)
		}
	}
	// Each event a cause rests on is a timeline row marked as used.
	for _, c := range a.Causes {
		for _, e := range append(append([]correlate.Evidence(nil), c.Evidence...), c.CounterEvidence...) {
			if e.Event == "" {
				continue
			}
			for _, ev := range a.Events {
				if ev.ID != e.Event {
					continue
				}
				at := views.FmtTime(ev.Time, time.Time{})
				found := false
				for _, line := range strings.Split(md, "\n") {
					if strings.HasPrefix(line, "| "+at+" |") && strings.HasSuffix(line, "| yes |") {
						found = true
					}
				}
				if !found {
					t.Errorf("share export: the %s cause rests on event %s at %s, which the timeline does not mark", c.Category, ev.ID, at)
				}
			}
		}
	}
	if strings.Contains(md, "/incidents/") {
		t.Error("the share export links the signed-in page")
	}
}

// checkPhone reads the incident page at 390 px: one column (nothing wider
// than the screen but the timeline, which scrolls sideways inside its
// card), the checklist's steps stacked, the sample table at its key
// columns.
func checkPhone(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)), revealRegion()), "phone")
	defer func() {
		must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900)), "back to a laptop")
	}()
	var got struct {
		PageWidth  float64  `json:"pageWidth"`
		Wide       []string `json:"wide"`
		Steps      []float64
		TLScroll   bool `json:"tlScroll"`
		SampleCols int  `json:"sampleCols"`
		// OnsetSeen: the onset line lies in the timeline's visible part
		// (the window's first hours were on screen, the spike not).
		OnsetSeen *bool `json:"onsetSeen"`
	}
	raw := evalString(t, ctx, `(() => {
		const vw = document.documentElement.clientWidth, wide = [];
		for (const el of document.querySelectorAll('main *')) {
			if (el.closest('#timeline .tl, .scroll-x, section.card table, pre') || !el.getClientRects().length) continue;
			const r = el.getBoundingClientRect();
			if (r.right > vw + 1 && getComputedStyle(el).position !== 'absolute') wide.push(el.tagName.toLowerCase() + '.' + el.className + ' ' + Math.round(r.right));
		}
		const tl = document.querySelector('#timeline');
		const row = document.querySelector('[data-testid=sample-row]');
		return JSON.stringify({pageWidth: document.documentElement.scrollWidth, wide: wide.slice(0, 10),
			steps: [...document.querySelectorAll('.checklist > li')].map(li => li.getBoundingClientRect().width / vw),
			tlScroll: !!tl && tl.scrollWidth > tl.clientWidth,
			onsetSeen: (() => {
				const on = tl && tl.querySelector('.tl-onset');
				if (!on) return null;
				const b = tl.getBoundingClientRect(), x = on.getBoundingClientRect().left;
				return x >= b.left && x <= b.right;
			})(),
			sampleCols: row ? [...row.children].filter(td => td.getClientRects().length).length : 0});
	})()`)
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if got.PageWidth > 391 || len(got.Wide) > 0 {
		t.Errorf("at 390 px the page is %.0f px wide; too wide: %v", got.PageWidth, got.Wide)
	}
	for i, w := range got.Steps {
		if w < 0.7 {
			t.Errorf("checklist step %d takes %.0f%% of the width: not one column", i+1, 100*w)
		}
	}
	if !got.TLScroll {
		t.Error("the timeline does not scroll sideways at 390 px")
	}
	if got.OnsetSeen != nil && !*got.OnsetSeen {
		t.Error("at 390 px the timeline opens away from the onset")
	}
	if got.SampleCols > 4 {
		t.Errorf("the sample table shows %d columns at 390 px", got.SampleCols)
	}
}

// checkBrush drags a box over the slow requests after the onset in the
// latency heatmap and reads the selection-vs-rest comparison it brings.
func checkBrush(t *testing.T, ctx context.Context) {
	t.Helper()
	var box struct{ X, Y, W, H float64 }
	raw := evalString(t, ctx, `(() => { const c = document.querySelector('[data-testid=heatmap-canvas]'); if (!c) return '';
		c.scrollIntoView({block: 'center'}); const r = c.getBoundingClientRect();
		return JSON.stringify({x: r.left, y: r.top, w: r.width, h: r.height}); })()`)
	if raw == "" {
		t.Error("no latency heatmap on the incident page")
		return
	}
	if err := json.Unmarshal([]byte(raw), &box); err != nil {
		t.Fatal(err)
	}
	// The right two thirds (the spike), the upper half (slow).
	must(t, chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, box.X+box.W*0.67, box.Y+2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box.X+box.W*0.8, box.Y+box.H*0.3, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box.X+box.W-2, box.Y+box.H*0.5, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, box.X+box.W-2, box.Y+box.H*0.5, chromedp.ButtonLeft),
		chromedp.WaitVisible(chromedp.CSS(`#bubbleup h3`)),
	), "brush the heatmap")
	what := evalString(t, ctx, `document.querySelector('#bubbleup h3').textContent`)
	rows := evalString(t, ctx, `[...document.querySelectorAll('[data-testid=bubbleup-row] a')].map(a => a.textContent).join(', ')`)
	empty := evalString(t, ctx, `document.querySelector('[data-testid=bubbleup-empty]')?.textContent || ''`)
	if !strings.Contains(what, "Selection:") || (rows == "" && empty == "") {
		t.Errorf("brushing the heatmap: %q, rows %q, %q", what, rows, empty)
	}
	t.Logf("brushed %s → %s%s", what, rows, empty)
}

func readyAnalysis(t *testing.T, s *stacktest.Stack, id int64) correlate.Analysis {
	t.Helper()
	rec, err := s.Store.LatestReadyAnalysis(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var a correlate.Analysis
	if err := json.Unmarshal(rec.Result, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// checkStory holds the page to the analysis' story.
func checkStory(t *testing.T, ctx context.Context, a correlate.Analysis) {
	t.Helper()
	// The title's model is the one whose P99 rose most.
	if len(a.Impact) > 0 {
		best := a.Impact[0]
		for _, im := range a.Impact {
			if im.Rise > best.Rise {
				best = im
			}
		}
		title := evalString(t, ctx, `document.querySelector('[data-testid=title]').textContent`)
		if model := evalString(t, ctx, `document.querySelector('[data-testid=title]').dataset.model`); model != best.Model || !strings.Contains(title, best.Model) {
			t.Errorf("title %q (model %q); the largest P99 rise is %s's (×%.1f)", title, model, best.Model, best.Rise)
		}
		peak := views.FmtMs(math.Max(best.PeakP99Ms, best.DuringP99Ms))
		got := evalString(t, ctx, fmt.Sprintf(`document.querySelector('[data-testid=impact-row][data-model=%s] [data-testid=peak]')?.textContent || ''`, jsString(best.Model)))
		if got != peak {
			t.Errorf("header shows peak %q for %s, the analysis' peak is %s", got, best.Model, peak)
		}
	} else {
		t.Logf("no affected model in the analysis: title %q", evalString(t, ctx, `document.querySelector('[data-testid=title]').textContent`))
	}
	// The samples step names the concentration row the top cause rests on
	// (its strongest evidence item resting on a row, found here from the
	// causes, not read back from the checklist); when no item does, still
	// a row of the table. That row is on the page and clickable.
	inTable := map[string]bool{}
	for _, c := range a.Concentration {
		inTable[views.DimsKey(c.Dims)] = true
	}
	want, topCat := "", correlate.Category("none")
	if len(a.Causes) > 0 {
		topCat = a.Causes[0].Category
	}
	if topCat != "none" && topCat != correlate.CatUnexplained {
		for _, e := range a.Causes[0].Evidence { // strongest first
			// spread_over_pool cites the strongest row as what the
			// slow requests are NOT concentrated on.
			if len(e.Row) > 0 && e.Name != "spread_over_pool" && inTable[views.DimsKey(e.Row)] {
				want = views.DimsKey(e.Row)
				break
			}
		}
	}
	named := evalString(t, ctx, `document.querySelector('[data-testid=step-samples] [data-testid=step-row]')?.dataset.row || ''`)
	key := evalString(t, ctx, `document.querySelector('[data-testid=step-samples] [data-testid=step-key]')?.textContent || ''`)
	switch {
	case want != "" && (named != want || !strings.Contains(key, want)):
		t.Errorf("samples step names %q (%q); the top cause (%s) rests on row %s", named, key, topCat, want)
	case want == "" && len(a.Concentration) > 0 && (!inTable[named] || !strings.Contains(key, named)):
		t.Errorf("samples step names %q (%q), not a row of the concentration table", named, key)
	case len(a.Concentration) == 0 && named != "":
		t.Errorf("samples step names row %q with an empty concentration table", named)
	}
	// One P99 per model: the step quotes the rise the header's ratio is
	// made of (baseline → during), never the samples' own P99, and the
	// concentration table gives shares, not milliseconds.
	for _, m := range regexp.MustCompile(`(\S+)'s P99 rise \(([^)]*) → ([^)]*)\)`).FindAllStringSubmatch(key, -1) {
		for _, im := range a.Impact {
			if im.Model == m[1] && (!nearMs(m[2], im.BaselineP99Ms) || !nearMs(m[3], im.DuringP99Ms)) {
				t.Errorf("samples step quotes %s's P99 rise as %s → %s; the impact's is %.0f → %.0f ms", m[1], m[2], m[3], im.BaselineP99Ms, im.DuringP99Ms)
			}
		}
	}
	if strings.Contains(key, "would be") {
		t.Errorf("samples step %q quotes the samples' own P99", key)
	}
	if ms := evalString(t, ctx, `[...document.querySelectorAll('[data-testid=conc-row] td:last-child')].map(e => e.textContent).filter(s => / m?s\b/.test(s)).join(' | ')`); ms != "" {
		t.Errorf("concentration table quotes P99s in time units (%s), another population than the header's", ms)
	}
	if named != "" {
		if n := evalString(t, ctx, fmt.Sprintf(`String(document.querySelectorAll('[data-testid=conc-link][data-row=%s]').length)`, jsString(named))); n != "1" {
			t.Errorf("concentration row %s: %s clickable rows on the page", named, n)
		}
	}
	t.Logf("top cause %s; %d concentration rows; the top cause rests on row %q; the samples step names %q",
		topCat, len(a.Concentration), want, named)
	if n := evalString(t, ctx, `String([...document.querySelectorAll('[data-testid=conc-row]')].filter(r => !r.querySelector('[data-testid=conc-link]')).length)`); n != "0" {
		t.Errorf("%s concentration rows cannot be clicked", n)
	}
	// The higher ranked of the capacity and cold-start causes shows the
	// pool its actions act on: the replicas the analysis compared, and the
	// autoscaler's limits from the pool-state curves or its scale events
	// (the simulator exports them), "not known" when neither has them.
	for _, c := range a.Causes {
		if c.Category != correlate.CatCapacity && c.Category != correlate.CatColdStart {
			continue
		}
		if c.Target.Model == "" {
			break
		}
		// The replicas that served during the spike (see
		// views.replicaLine): a pool that scaled down, or a rollout's old
		// pods, leave replicas measured only before it, and how many the
		// bundle has depends on the hour it starts at.
		n := 0
		for _, r := range a.Replicas {
			if r.Model == c.Target.Model && (r.P99DuringMs > 0 || r.LoadDuring > 0) {
				n++
			}
		}
		sel := fmt.Sprintf(`[data-testid=cause][data-category=%s] [data-testid=pool][data-model=%s]`, c.Category, jsString(c.Target.Model))
		reps := evalString(t, ctx, `document.querySelector('`+sel+` [data-testid=pool-replicas]')?.textContent || ''`)
		limits := evalString(t, ctx, `document.querySelector('`+sel+` [data-testid=pool-limits]')?.textContent || ''`)
		want := "not known"
		if n > 0 {
			want = fmt.Sprintf("%d replica", n)
		}
		wantLimits, wantWhere := "not known", ""
		for _, e := range a.Events {
			if hi, ok := e.Attrs["hpa_max_replicas"].(float64); ok && e.Model == c.Target.Model &&
				(e.Kind == correlate.KindScaleUp || e.Kind == correlate.KindScaleDown) {
				lo, _ := e.Attrs["hpa_min_replicas"].(float64)
				wantLimits = fmt.Sprintf("autoscaler %g–%g replicas; ", lo, hi) // the latest event's: the sim's limits are fixed
			}
		}
		// The pool-state curves (the simulator exports the autoscaler's
		// limits) say it even when nothing scaled the model, and where
		// the desired replicas stand.
		for _, p := range a.Pools {
			if p.Model == c.Target.Model && p.MaxReplicas > 0 {
				wantLimits, wantWhere = fmt.Sprintf("autoscaler %g–%g replicas; ", p.MinReplicas, p.MaxReplicas), "below its max"
				if p.AtMaxSince != nil {
					wantWhere = "at its max since"
				}
			}
		}
		if !strings.HasPrefix(reps, want) || !strings.HasPrefix(limits, wantLimits) || !strings.Contains(limits, wantWhere) {
			t.Errorf("%s cause's pool: replicas %q (analysis: %d), limits %q (want %q… %q)", c.Category, reps, n, limits, wantLimits, wantWhere)
		}
		t.Logf("%s pool: %q; limits %q", c.Category, reps, limits)
		if pools := evalString(t, ctx, `String(document.querySelectorAll('[data-testid=pool]').length)`); pools != "1" {
			t.Errorf("%s pools on the page, want one", pools)
		}
		break
	}
	// The GPU lane reads the GPUs the capacity evidence quotes: the
	// affected replicas', on a scale that holds the quoted level.
	for _, c := range a.Causes {
		if c.Target.Model == "" || c.Target.Model != a.Headline.Model {
			continue // the lane follows the headline model
		}
		for _, e := range c.Evidence {
			if e.Name != "gpu_busy" {
				continue
			}
			ymax := evalString(t, ctx, `document.querySelector('[data-testid=lane-gpu] .ymax')?.textContent || ''`)
			var top float64
			fmt.Sscanf(strings.TrimPrefix(ymax, "scale 0–"), "%g", &top)
			if !strings.Contains(ymax, "per replica of "+a.Headline.Model) || top < e.Value {
				t.Errorf("GPU lane %q; the %s cause says the affected replicas' GPUs run at %.0f%%", ymax, c.Category, e.Value)
			}
		}
	}
	// Every count of slow requests agrees with the analysis' one count.
	var counts struct {
		Total  []string `json:"total"`
		Models []string `json:"models"`
		Text   []string `json:"text"`
	}
	raw := evalString(t, ctx, `JSON.stringify({
		total: [...document.querySelectorAll('[data-slow-requests][data-part=total]')].map(e => e.dataset.slowRequests),
		models: [...document.querySelectorAll('[data-slow-requests][data-part=model]')].map(e => e.dataset.slowRequests),
		text: [...document.body.innerText.matchAll(/([0-9][0-9,]*) slow requests/g)].map(m => m[1].replaceAll(',', '')),
	})`)
	if err := json.Unmarshal([]byte(raw), &counts); err != nil {
		t.Fatal(err)
	}
	total := views.FmtInt(a.Samples.SlowRequests)
	allowed := map[string]bool{total: true}
	sum := 0.0
	for _, im := range a.Impact {
		allowed[views.FmtInt(im.SlowRequests)] = true
		sum += math.Round(im.SlowRequests)
	}
	if a.Samples.SlowRequests > 0 && (len(counts.Total) == 0 || len(counts.Models) == 0) {
		t.Errorf("the header lacks the slow-request count: %+v", counts)
	}
	for _, c := range counts.Total {
		if c != total {
			t.Errorf("header says %s slow requests, the analysis %s", c, total)
		}
	}
	for _, c := range append(counts.Models, counts.Text...) {
		if !allowed[c] {
			t.Errorf("the page says %s slow requests; the analysis: %s in all, per model %v", c, total, countKeys(allowed))
		}
	}
	if len(a.Impact) > 1 && math.Abs(sum-math.Round(a.Samples.SlowRequests)) > float64(len(a.Impact)) {
		t.Errorf("per-model slow requests sum to %.0f, the total is %s", sum, total)
	}
	// The crosshair lists the values under it, in their units, for every
	// drawn lane.
	var box struct{ X, Y float64 }
	if err := json.Unmarshal([]byte(evalString(t, ctx, `(() => { const p = document.querySelector('[data-testid=lane-latency] .tl-plot');
		p.scrollIntoView({block: 'center'}); const r = p.getBoundingClientRect();
		return JSON.stringify({x: r.left + r.width * 0.7, y: r.top + r.height / 2}); })()`)), &box); err != nil {
		t.Fatal(err)
	}
	must(t, chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box.X, box.Y)), "hover the latency lane")
	tip := evalString(t, ctx, `document.querySelector('[data-testid=crosshair-values]')?.innerText || ''`)
	if !strings.Contains(tip, " ms") || !strings.Contains(tip, "Latency P99") || strings.Count(tip, "\n") < 1 {
		t.Errorf("crosshair values %q: want every lane's values with units", tip)
	}
	// The value shown is the series' own at that time, not read back
	// from the drawn pixels (one pixel of a 10 s scale is 94 ms).
	var probe struct {
		Name     string
		Expected string
		Tip      string
	}
	if err := json.Unmarshal([]byte(evalString(t, ctx, `(() => {
		const tl = document.querySelector('[data-testid=timeline]'), ov = tl.querySelector('.tl-overlay').getBoundingClientRect();
		const f = (`+strconv.FormatFloat(box.X, 'f', 3, 64)+` - ov.left) / ov.width;
		const tms = Number(tl.dataset.from) + f * (Number(tl.dataset.to) - Number(tl.dataset.from));
		const p = tl.querySelector('[data-testid=lane-latency] path[data-n]');
		const i = Math.round(tms / Number(tl.dataset.step)) - Number(p.dataset.v0);
		return JSON.stringify({name: p.dataset.n, expected: (p.dataset.v || '').split(',')[i] || '', tip: document.querySelector('[data-testid=crosshair-values]').innerText});
	})()`)), &probe); err != nil {
		t.Fatal(err)
	}
	if probe.Expected != "" {
		want, _ := strconv.ParseFloat(probe.Expected, 64)
		m := regexp.MustCompile(regexp.QuoteMeta(probe.Name) + ` ([\d,.]+) ms`).FindStringSubmatch(probe.Tip)
		got := math.NaN()
		if m != nil {
			got, _ = strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		}
		if math.IsNaN(got) || math.Abs(got-want) > math.Max(0.06, want*0.006) {
			t.Errorf("crosshair says %s is %v ms; its value there is %v ms (tip %q)", probe.Name, got, want, probe.Tip)
		}
	}
	// Each line names its lane in full, so no two lines share a name:
	// "Node:" was CPU, memory and network alike.
	seen := map[string]bool{}
	for _, line := range strings.Split(tip, "\n") {
		name, _, _ := strings.Cut(line, ":")
		if seen[name] {
			t.Errorf("two crosshair lines are named %q: %q", name, tip)
		}
		seen[name] = true
	}
	t.Logf("title %q; samples step %q; slow requests %s (per model %v, in text %v)",
		evalString(t, ctx, `document.querySelector('[data-testid=title]').textContent`),
		evalString(t, ctx, `document.querySelector('[data-testid=step-samples] [data-testid=step-key]')?.textContent || ''`), total, counts.Models, counts.Text)
	if strings.Contains(evalString(t, ctx, `document.body.innerText`), "IQR") {
		t.Error(`the page says "IQR"`)
	}
}

// nearMs reports whether a duration as the page prints it ("644 ms",
// "1,307 ms", "1.08 s") is v ms, to its printed precision.
func nearMs(s string, v float64) bool {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	mult := 1.0
	switch {
	case strings.HasSuffix(s, " ms"):
		s = strings.TrimSuffix(s, " ms")
	case strings.HasSuffix(s, " s"):
		s, mult = strings.TrimSuffix(s, " s"), 1000
	default:
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && math.Abs(f*mult-v) <= math.Max(1, 0.01*v)
}

func countKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// consoleWatch collects what the browser reports: console errors,
// uncaught exceptions and failed requests (network failures and HTTP
// statuses ≥ 400), since the last reset.
type consoleWatch struct {
	mu       sync.Mutex
	problems []string
	urls     map[network.RequestID]string
}

func watchConsole(t *testing.T, ctx context.Context) *consoleWatch {
	t.Helper()
	w := &consoleWatch{urls: map[network.RequestID]string{}}
	listenErr := chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			w.urls[e.RequestID] = e.Request.URL
		case *network.EventLoadingFailed:
			if !e.Canceled {
				w.problems = append(w.problems, "request failed: "+w.urls[e.RequestID]+": "+e.ErrorText)
			}
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				w.problems = append(w.problems, fmt.Sprintf("HTTP %d: %s", int(e.Response.Status), e.Response.URL))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			w.problems = append(w.problems, fmt.Sprintf("exception: %s at %s:%d", msg, d.URL, d.LineNumber+1))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				w.problems = append(w.problems, "console.error: "+strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				w.problems = append(w.problems, "console: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	})
	must(t, listenErr, "listen to the browser")
	must(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
		return err
	})), "enable console and network events")
	return w
}

func (w *consoleWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.problems
	w.problems = nil
	return out
}

// contrastJS computes the WCAG 2 contrast ratio of every visible text
// element against its effective background (the first opaque ancestor
// background, with translucent ones composited on top) and lists those
// under 4.5:1 (3:1 for large text), legends under 12 px and event markers
// without an accessible name.
const contrastJS = `(() => {
	const parse = c => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
		const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
	const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const over = (top, bottom) => { const a = top[3]; return [top[0] * a + bottom[0] * (1 - a), top[1] * a + bottom[1] * (1 - a), top[2] * a + bottom[2] * (1 - a), 1]; };
	const background = el => { const layers = [];
		for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor);
			if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
		let bg = [255, 255, 255, 1]; for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg); return bg; };
	const bad = [];
	for (const el of document.querySelectorAll('body *')) {
		if (!el.getClientRects().length) continue;
		const text = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
		if (!text) continue;
		const cs = getComputedStyle(el);
		if (cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0 || el.closest('[aria-hidden=true]')) continue;
		const bg = background(el), fg = over(parse(cs.color), bg);
		const l1 = lum(fg), l2 = lum(bg), ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
		const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight, 10) >= 700;
		const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
		if (ratio < need) bad.push(ratio.toFixed(2) + ':1 ' + el.tagName.toLowerCase() + '.' + el.className + ' "' + text.slice(0, 40) + '"');
		if (el.closest('.legend') && size < 12) bad.push('legend text of ' + size + ' px: "' + text.slice(0, 40) + '"');
	}
	for (const m of document.querySelectorAll('.tl-events .ev')) if (!(m.getAttribute('aria-label') || '').trim()) bad.push('event marker "' + m.textContent + '" without an accessible name');
	return JSON.stringify(bad.slice(0, 30));
})()`

// checkPageHealth fails on console errors and failed requests since the
// last check; on the main pages (kind "incident") it also checks contrast.
func checkPageHealth(t *testing.T, ctx context.Context, w *consoleWatch, name, kind string) {
	t.Helper()
	// Let late requests (htmx polls, the favicon) finish.
	must(t, chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)), "settle")
	for _, p := range w.take() {
		t.Errorf("%s page: %s", name, p)
	}
	var bad []string
	if err := json.Unmarshal([]byte(evalString(t, ctx, contrastJS)), &bad); err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s page: %s", name, b)
	}
}

// revealRegion scrolls the incident page's lazy region (timeline,
// concentration, samples) into view and waits until htmx has loaded it.
func revealRegion() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		return chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`document.getElementById('filtered')?.scrollIntoView()`),
			chromedp.WaitVisible(chromedp.CSS(`#filtered[data-testid=filtered] [data-testid=timeline]`)),
			chromedp.Poll[chromedp.Void](`!document.querySelector('#filtered.htmx-request')`),
		)
	})
}
