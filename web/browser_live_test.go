package web_test

// The incident page in a browser while an incident goes on: a region that
// fails to load recovers, and links keep the reader's zoom.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// cutDatabase makes the env's database refuse connections and drops the
// ones open (a Postgres restart or failover, for this test's database
// only); the returned func lets connections in again.
func cutDatabase(t *testing.T, e *uiEnv) func() {
	t.Helper()
	ctx := context.Background()
	name := e.pool.Config().ConnConfig.Database
	admin, err := pgx.Connect(ctx, storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS false`, name))
	exec(fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()`, name))
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		exec(fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS true`, name))
		admin.Close(ctx)
	}
	t.Cleanup(restore)
	return restore
}

// The incident page loads its timeline, concentration table and samples
// lazily (hx-trigger="revealed"). When that one request failed — the
// database blipped (503 "database unavailable"), or the heavy-read
// limiter said "retry in a few seconds" when everyone opened the page at
// once — the region was never asked for again: it said "Loading the
// timeline…" for good, and the error went to the box at the top of the
// page, out of view of the reader who had scrolled down. The region now
// shows the error itself, with a "Retry now" button, and retries by
// itself with a growing delay, so it fills in once the database is back.
func TestBrowserLazyRegionRetriesAfterAnError(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	page := e.srv.URL + e.incidentPath()
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=filtered-lazy]`)),
	), "sign in; the page comes with its region still to load")
	restore := cutDatabase(t, e)
	down, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, chromedp.Do(down,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('filtered').scrollIntoView()`),
		chromedp.WaitVisible(chromedp.CSS(`#filtered [data-testid=filtered-error]`)),
	), "scroll to the region while the database is down")
	msg := evalString(t, ctx, `document.querySelector('#filtered [data-testid=filtered-error]').textContent`)
	if !strings.Contains(msg, "Trying again") {
		t.Errorf("the region's error says %q", msg)
	}
	if in := evalString(t, ctx, `(() => { const r = document.querySelector('[data-testid=filtered-error]').getBoundingClientRect(); return String(r.bottom > 0 && r.top < innerHeight) })()`); in != "true" {
		t.Error("the region's error is not in view of the reader who scrolled to it")
	}
	restore()
	// The database is back: the region fills in by itself.
	must(t, chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`!!document.querySelector('#filtered[data-testid=filtered] [data-testid=timeline]')`, chromedp.WithPollingTimeout(30*time.Second)),
	), "the region loads once the database is back (it said "+jsString(msg)+")")
}

// The lazy region's load that fails for a passing reason answers the
// region itself — its error, a retry button, and a retry after 2 s, then
// twice as long each time — while any other request's error still goes
// to the page's error box.
func TestLazyRegionErrorIsTheRegionWithARetry(t *testing.T) {
	e := newUIEnv(t)
	w := e.browser()
	w.login(e.read)
	lazy := func(failed string) page {
		return w.do("GET", e.incidentPath(), nil, map[string]string{"HX-Request": "true", "HX-Target": "filtered", "X-Waterline-Lazy": failed})
	}
	restore := cutDatabase(t, e)
	for _, c := range []struct{ failed, delay, next string }{{"0", "load delay:2s", "1"}, {"3", "load delay:16s", "4"}, {"12", "load delay:60s", "13"}} {
		r := lazy(c.failed)
		region := r.doc.Find(`#filtered[data-testid=filtered-lazy]`)
		if r.status < 500 || r.header.Get("HX-Retarget") != "" || region.Length() == 0 {
			t.Fatalf("lazy load after %s failures, database down: %d retarget %q %s", c.failed, r.status, r.header.Get("HX-Retarget"), r.body)
		}
		if got := region.AttrOr("hx-trigger", ""); !strings.HasPrefix(got, c.delay) {
			t.Errorf("after %s failures the region retries on %q, want %s", c.failed, got, c.delay)
		}
		if got := region.AttrOr("hx-headers", ""); !strings.Contains(got, `"`+c.next+`"`) {
			t.Errorf("after %s failures the region's next load says %s", c.failed, got)
		}
		if region.Find(`[data-testid=filtered-error]`).Length() == 0 || region.Find(`button[data-testid=filtered-retry][hx-get]`).Length() == 0 {
			t.Errorf("the region shows no error or no retry button: %s", r.body)
		}
	}
	// A filter click (no lazy header) still reports into the error box.
	if r := w.fragment(e.incidentPath(), "filtered"); r.header.Get("HX-Retarget") != "#htmx-error" {
		t.Errorf("a filter's failed request: %d retarget %q", r.status, r.header.Get("HX-Retarget"))
	}
	restore()
	// A refusal that a retry cannot fix is not retried.
	if r := lazy("0"); r.status != http.StatusOK || r.testid("timeline").Length() == 0 {
		t.Errorf("database back: the lazy load answers %d", r.status)
	}
	if r := w.do("GET", e.incidentPath()+"?from=yesterday", nil, map[string]string{"HX-Request": "true", "HX-Target": "filtered", "X-Waterline-Lazy": "0"}); r.status != http.StatusBadRequest || r.header.Get("HX-Retarget") != "#htmx-error" {
		t.Errorf("a bad lazy request: %d retarget %q", r.status, r.header.Get("HX-Retarget"))
	}
}

// The links above the filtered region — a cause's "Target" chips, the
// impact table's tenant chips, the checklist's "filter to …" chip — were
// rendered once, with the page's window at load time, yet swap only
// #filtered and push their own URL. After the reader zoomed (a drag or
// "zoom in": #filtered reloads, the URL gains from/to), clicking a
// cause's target threw the zoom away. They now send the window the
// region holds (#view-window) with their request.
func TestBrowserCauseTargetAfterZoomKeepsTheWindow(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	page := e.srv.URL + e.incidentPath()
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(),
	), "sign in and load the region")
	before := evalString(t, ctx, `document.querySelector('[data-testid=timeline-window]').textContent`)
	// Zoom in with the timeline's own link (the keyboard way to zoom).
	must(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#filtered .tl-bar a')].find(a => a.textContent.trim() === 'zoom in').click()`),
		chromedp.Poll[chromedp.Void](`location.search.includes('from=')`),
		chromedp.Poll[chromedp.Void](`!document.querySelector('#filtered.htmx-request') && document.querySelector('[data-testid=timeline-window]').textContent !== `+jsString(before)),
	), "zoom in")
	zoomedLoc, _ := chromedp.Run(ctx, chromedp.Location())
	zoomed := evalString(t, ctx, `document.querySelector('[data-testid=timeline-window]').textContent`)
	// Now narrow to the top cause's target.
	target := evalString(t, ctx, `document.querySelector('[data-testid=target]').textContent`)
	must(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=target]').click()`),
		chromedp.Poll[chromedp.Void](`location.href !== `+jsString(zoomedLoc)+` && !document.querySelector('#filtered.htmx-request')`),
	), "click the cause's target")
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	after := evalString(t, ctx, `document.querySelector('[data-testid=timeline-window]').textContent`)
	if !strings.Contains(loc, "from=") || after != zoomed {
		t.Errorf("zoomed to %q (%s), then clicked target %q: the view is now %q at %s — the zoom was dropped", zoomed, zoomedLoc, target, after, loc)
	}
}

// An open incident's page is not re-rendered while the analyzer
// recomputes: when a newer version is ready it offers it in a note. The
// note sat in the header, so the on-call reading the timeline or the
// samples — where they spend the incident — never saw it, and the
// header's "v1 · just now" still said "just now" long after. The note now
// stays in view wherever the reader is, and the version shown says at
// what clock time it was computed.
func TestBrowserNewerAnalysisNoteIsInViewOfAReaderScrolledDown(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, "")
	e.storeAnalysis(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+e.incidentPath()),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('samples').scrollIntoView()`),
	), "sign in and read the samples")
	if s := evalString(t, ctx, `document.querySelector('[data-testid=analysis-state]').textContent`); !strings.Contains(s, "UTC") {
		t.Errorf("the analysis shown says only %q: no clock time, so an open tab's \"just now\" never ages", strings.TrimSpace(s))
	}
	e.storeAnalysis(t) // the analyzer recomputed with new data
	must(t, chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`!!document.querySelector('[data-testid=analysis-newer]')`, chromedp.WithPollingTimeout(40*time.Second)),
	), "the page offers the newer analysis")
	inView := `(() => { const r = document.querySelector('[data-testid=analysis-newer]').getBoundingClientRect(); return String(r.height > 0 && r.top >= 0 && r.bottom <= innerHeight) })()`
	if got := evalString(t, ctx, inView); got != "true" {
		t.Errorf("a newer analysis is ready, but its note is out of view of the reader scrolled to the samples (scrollY %s)", evalString(t, ctx, `String(scrollY)`))
	}
}

// The heatmap's time axis: "UTC" and the first tick printed over each
// other ("UT00:30") whenever the window began on a tick, and on a phone
// the eight "15:04" ticks ran into one another ("00:00:15 00:30").
func TestBrowserHeatmapAxisLabelsDoNotOverlap(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	// Two hours from a quarter past: eight ticks, the first on the left edge.
	from := e.spikeAt.Add(-time.Hour).Truncate(15 * time.Minute)
	page := e.srv.URL + e.incidentPath() + "?from=" + from.Format(time.RFC3339) + "&to=" + from.Add(2*time.Hour).Format(time.RFC3339)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
	), "sign in")
	overlaps := `(() => {
		const els = [...document.querySelectorAll('.heat-tz, .heat-x span')].filter(e => e.getClientRects().length > 0);
		const out = [];
		for (let i = 0; i < els.length; i++) for (let j = i + 1; j < els.length; j++) {
			const a = els[i].getBoundingClientRect(), b = els[j].getBoundingClientRect();
			if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) out.push(els[i].textContent + '/' + els[j].textContent);
		}
		return els.length + ' labels; overlapping: ' + out.join(', ');
	})()`
	for _, w := range []int64{1366, 390} {
		must(t, chromedp.Do(ctx,
			chromedp.EmulateViewport(w, 900),
			chromedp.Navigate(page),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
			revealRegion(),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid=heatmap-canvas]`)),
		), fmt.Sprintf("the heatmap at %d px", w))
		if got := evalString(t, ctx, overlaps); !strings.HasSuffix(got, "overlapping: ") {
			t.Errorf("at %d px the heatmap's time axis prints labels over each other: %s", w, got)
		}
	}
}

// The home page stays open in a tab through a shift. It never reloaded:
// an incident the detector opened, or a new spike, showed only after a
// manual reload, and "(1 min ago)" kept saying so. Its lists now reload
// on their own.
func TestBrowserHomeShowsANewIncidentWithoutAReload(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/"),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`)),
	), "sign in to the home page")
	const title = "rerank P99 up, opened while the page was open"
	if _, err := e.st.CreateIncident(context.Background(), store.NewIncident{Title: title, Start: e.from,
		Source: store.SourceDetector, Scope: correlate.Scope{Model: "chat"}}); err != nil {
		t.Fatal(err)
	}
	must(t, chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid=open-incidents]').textContent.includes(`+strconv.Quote(title)+`)`,
			chromedp.WithPollingTimeout(40*time.Second)),
	), "the new incident shows on the open home page")
	if s := evalString(t, ctx, `document.querySelector('[data-testid=home-updated]').textContent`); !strings.Contains(s, "UTC") {
		t.Errorf("the home page says %q: not when its lists were loaded", s)
	}
}

// Each timeline lane's scale ("scale 0–2 replicas, per model") sat in a
// near-opaque box in the plot's top right corner: over the newest data,
// the part of the curve an open incident's reader looks at. It is in the
// lane's label column now, clear of the plot.
func TestBrowserTimelineScaleLeavesTheNewestDataVisible(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+e.incidentPath()),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=lane-latency] svg`)),
	), "sign in and show the timeline")
	over := `(() => {
		const out = [];
		for (const row of document.querySelectorAll('.tl-row')) {
			const plot = row.querySelector('.tl-plot'), y = row.querySelector('.ymax');
			if (!plot || !y) continue;
			const a = plot.getBoundingClientRect(), b = y.getBoundingClientRect();
			if (b.left < a.right && a.left < b.right && b.top < a.bottom && a.top < b.bottom) out.push(y.textContent);
		}
		return document.querySelectorAll('.ymax').length + ' scales; over the plot: ' + out.join(' | ');
	})()`
	if got := evalString(t, ctx, over); strings.HasPrefix(got, "0 ") || !strings.HasSuffix(got, "over the plot: ") {
		t.Errorf("timeline scales: %s", got)
	}
}

// On a phone the timeline scrolls sideways, and it opens scrolled to the
// onset: the lane names scrolled away with the curves, and nothing said
// which curve was which. They stay in view now.
func TestBrowserTimelineLaneNamesStayOnAPhone(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(e.srv.URL+e.incidentPath()),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=lane-latency] svg`)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('timeline').scrollLeft = 10000`),
	), "sign in on a phone and scroll the timeline to its end")
	seen := `(() => {
		const box = document.getElementById('timeline').getBoundingClientRect();
		const name = document.querySelector('[data-testid=lane-latency] .tl-label .name').getBoundingClientRect();
		return String(document.getElementById('timeline').scrollLeft > 0 && name.left >= box.left - 1 && name.right <= box.right + 1)
	})()`
	if got := evalString(t, ctx, seen); got != "true" {
		t.Errorf("scrolled to the timeline's end on a phone, the latency lane's name is out of view (scrollLeft %s)",
			evalString(t, ctx, `String(document.getElementById('timeline').scrollLeft)`))
	}
}

// signIn fills the sign-in form the page answered with, with token.
func signIn(token string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		return chromedp.Do(ctx,
			chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`)),
			chromedp.SendKeys(chromedp.ID("token"), token),
			chromedp.Submit(chromedp.ID("token")),
		)
	})
}
