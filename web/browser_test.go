package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/sim"
)

// TestBrowserIncidentFlow replays a simulated local-replica incident (a
// throttled GPU node, so slow requests concentrate on its replicas) through the
// real stack (Postgres, Prometheus, pull, analysis) and drives the UI in
// headless Chromium: sign in, the top cause, a concentration row filtering
// the samples, a drag-zoom changing the URL and the lanes, and the share
// link opening without a session with its meta tags. Screenshots go to
// screenshots/ (git-ignored).
func TestBrowserIncidentFlow(t *testing.T) {
	b := stacktest.SimBundle(t, "sim-local-replica", sim.Options{Seed: 3, Scenario: sim.LocalReplica, Duration: 2 * time.Hour,
		Onset: 80 * time.Minute, Models: 2, ReplicasPerModel: 2, Nodes: 3, Tenants: 4, TrafficScale: 0.6})
	browserFlow(t, b)
}

// TestBrowserSharedBundle runs the same flow on one public bundle when the
// shared scenarios are present.
func TestBrowserSharedBundle(t *testing.T) {
	dir := filepath.Join(stacktest.ScenariosDir(), "01-release")
	b, ok := stacktest.DirBundle(t, dir)
	if !ok {
		t.Skipf("no shared bundle at %s (set WATERLINE_SCENARIOS to a folder of bundles); the simulated flow still ran", dir)
	}
	browserFlow(t, b)
}

func browserFlow(t *testing.T, b stacktest.Bundle) {
	s := stacktest.Start(t, b, stacktest.Options{})
	id := s.Incident(t, "P99 up: "+b.Name)
	if got := s.TopCause(t, id); got != b.Truth.Category {
		t.Logf("note: analysis ranks %q first, truth is %q; the UI must show the analysis' ranking", got, b.Truth.Category)
	}
	want := s.TopCause(t, id)
	ctx := browser(t)
	shots := screenshotDir(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, b.Name+"-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := fmt.Sprintf("%s/incidents/%d", s.URL, id)

	// Not signed in: the page sends the browser to /login, which brings it
	// back after the token is pasted.
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`)),
		chromedp.SendKeys(chromedp.ID("token"), s.Token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`)),
		revealRegion(),
	), "sign in")
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if loc != page {
		t.Fatalf("after sign-in at %s, want %s", loc, page)
	}
	cat := evalString(t, ctx, `document.querySelector('[data-testid=cause]').dataset.category`)
	if cat != want {
		t.Fatalf("first cause on the page is %q, the analysis' top cause is %q", cat, want)
	}
	shot("incident")

	// A click on a concentration row filters the samples to it.
	type rowInfo struct {
		Href  string `json:"href"`
		Key   string `json:"key"`
		Total string `json:"total"`
	}
	var row rowInfo
	raw := evalString(t, ctx, `(() => {
		const scope = ['model','version','tenant','replica','node'];
		for (const a of document.querySelectorAll('[data-testid=conc-link]')) {
			const keys = a.textContent.split(' · ').map(p => p.split('=')[0]);
			if (keys.every(k => scope.includes(k))) return JSON.stringify({href: a.getAttribute('href'), key: a.textContent,
				total: document.querySelector('[data-testid=sample-range]')?.textContent || ''});
		}
		return '';
	})()`)
	if raw == "" {
		t.Fatal("no filterable concentration row on the page")
	}
	if err := json.Unmarshal([]byte(raw), &row); err != nil {
		t.Fatal(err)
	}
	must(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=conc-link][href="`+row.Href+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=filter-chip]`)),
		chromedp.Poll[chromedp.Void](`!document.querySelector('#filtered.htmx-request')`),
	), "click concentration row")
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	if !strings.HasSuffix(loc, row.Href) {
		t.Errorf("after the row click the URL is %s, want …%s", loc, row.Href)
	}
	for _, kv := range strings.Split(row.Key, " · ") {
		v := kv[strings.IndexByte(kv, '=')+1:]
		bad := evalString(t, ctx, fmt.Sprintf(`(() => {
			const rows = [...document.querySelectorAll('[data-testid=sample-row]')];
			if (!rows.length) return 'no sample rows';
			const b = rows.find(r => !r.textContent.includes(%q));
			return b ? b.textContent : '';
		})()`, v))
		if bad != "" {
			t.Errorf("after filtering to %s a sample row lacks %q: %s", row.Key, v, bad)
		}
	}
	if sel := evalString(t, ctx, `document.querySelector('tr[aria-selected] [data-testid=conc-link]')?.textContent || ''`); sel != row.Key {
		t.Errorf("selected concentration row %q, want %q", sel, row.Key)
	}
	shot("filtered")

	// Drag across the latency lane: the URL gets from/to and the lanes
	// are redrawn for the narrower window.
	before := evalString(t, ctx, `document.querySelector('[data-testid=timeline-window]').textContent`)
	pathBefore := evalString(t, ctx, `document.querySelector('[data-testid=lane-latency] path')?.getAttribute('d') || ''`)
	var box struct{ X, Y, W float64 }
	raw = evalString(t, ctx, `(() => { const p = document.querySelector('[data-testid=lane-latency] .tl-plot');
		p.scrollIntoView({block: 'center'}); const r = p.getBoundingClientRect();
		return JSON.stringify({x: r.left, y: r.top + r.height / 2, w: r.width}); })()`)
	if err := json.Unmarshal([]byte(raw), &box); err != nil {
		t.Fatal(err)
	}
	must(t, chromedp.Do(ctx,
		chromedp.DragAndDropXY(box.X+box.W*0.55, box.Y, box.X+box.W*0.8, box.Y, 12),
		chromedp.Poll[chromedp.Void](`location.search.includes('from=')`),
		chromedp.Poll[chromedp.Void](`!document.querySelector('#filtered.htmx-request') && document.querySelector('[data-testid=timeline-window]').textContent !== `+jsString(before)),
	), "drag to zoom")
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	u, _ := url.Parse(loc)
	from, err1 := time.Parse(time.RFC3339, u.Query().Get("from"))
	to, err2 := time.Parse(time.RFC3339, u.Query().Get("to"))
	if err1 != nil || err2 != nil || !from.Before(to) {
		t.Fatalf("zoomed URL %s: from/to %v %v", loc, err1, err2)
	}
	if u.Query().Get(strings.SplitN(row.Key, "=", 2)[0]) == "" {
		t.Errorf("zoom dropped the filter: %s", loc)
	}
	if pathAfter := evalString(t, ctx, `document.querySelector('[data-testid=lane-latency] path')?.getAttribute('d') || ''`); pathAfter == pathBefore {
		t.Error("the latency lane did not change after the zoom")
	}
	shot("zoomed")
	// Back restores the previous view (htmx history).
	must(t, chromedp.Do(ctx, chromedp.NavigateBack(),
		chromedp.Poll[chromedp.Void](`!location.search.includes('from=')`)), "back")

	// The other pages, for people to look at.
	must(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`))), "home")
	shot("home")
	explore := fmt.Sprintf("%s/explore?from=%s&to=%s", s.URL, b.Start.Format(time.RFC3339), b.End.Format(time.RFC3339))
	must(t, chromedp.Do(ctx, chromedp.Navigate(explore), chromedp.WaitVisible(chromedp.CSS(`[data-testid=timeline]`))), "explore")
	if n := evalString(t, ctx, `String(document.querySelectorAll('[data-testid=lane-latency] path').length)`); n == "0" {
		t.Error("the explorer shows no latency curve over the bundle's window")
	}
	shot("explore")

	// Share: create the link, then open it with no cookie at all.
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.Click(chromedp.CSS(`[data-testid=share]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=share-url]`)),
	), "create share link")
	shareURL, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`[data-testid=share-url]`)))
	if err != nil || !strings.Contains(shareURL, "/s/") {
		t.Fatalf("share URL %q: %v", shareURL, err)
	}
	must(t, chromedp.Do(ctx, clearCookies(), chromedp.Navigate(shareURL),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=causes]`))), "open share link")
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	if loc != shareURL {
		t.Fatalf("share link went to %s", loc)
	}
	if n := evalString(t, ctx, `String(document.querySelectorAll('form[method=post]').length)`); n != "0" {
		t.Errorf("share page has %s forms; it must be read-only", n)
	}
	og := evalString(t, ctx, `(() => { const m = {}; for (const e of document.head.querySelectorAll('meta[property^="og:"], meta[name^="twitter:"]'))
		m[e.getAttribute('property') || e.getAttribute('name')] = e.content; return JSON.stringify(m); })()`)
	var tags map[string]string
	if err := json.Unmarshal([]byte(og), &tags); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"og:title", "og:description", "og:image", "twitter:card"} {
		if tags[k] == "" {
			t.Errorf("share page lacks %s: %v", k, tags)
		}
	}
	if !strings.Contains(tags["og:description"], "P99") {
		t.Errorf("og:description %q lacks the P99 change", tags["og:description"])
	}
	shot("share")
}

// browser starts headless Chromium (Debian's, as CI installs it) for the
// test, with the flags verified in the toolbox notes.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := "/usr/bin/chromium"
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("chromium not found at %s: install Debian's chromium package (scripts/test-deps.sh does)", exe)
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1366, 900),
	}
	root, cancelT := context.WithTimeout(context.Background(), 3*time.Minute)
	actx, cancelA := chromedp.NewExecAllocator(root, opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA(); cancelT() })
	return ctx
}

func screenshotDir(t *testing.T) string {
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			out := filepath.Join(d, "screenshots")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	return t.TempDir()
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func evalString(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// clearCookies drops every cookie, so the next page load is a stranger's
// (a chat crawler sends none).
func clearCookies() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{})
		return err
	})
}

// TestBrowserShowsFragmentErrors: an htmx request the server refuses shows
// its message. htmx swaps no 4xx/5xx answer by default, and the error
// fragment held no region the form selects: a From the server could not
// read did nothing at all, and the URL was not pushed either way.
func TestBrowserShowsFragmentErrors(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	explore := e.srv.URL + "/explore"
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(explore),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login]`)),
		chromedp.SendKeys(chromedp.ID("token"), e.read),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=explore-form]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid=explore-form] input[name=from]`), "yesterday 10:00"),
		chromedp.Click(chromedp.CSS(`[data-testid=explore-form] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#htmx-error [data-testid=error]`)),
	), "a refused explore query")
	msg := evalString(t, ctx, `document.querySelector('#htmx-error [data-testid=error]').textContent`)
	if !strings.Contains(msg, "400") || !strings.Contains(strings.ToLower(msg), "from") {
		t.Errorf("error shown: %q, want the 400 naming from", msg)
	}
	if v := evalString(t, ctx, `document.querySelector('[data-testid=explore-form] input[name=from]').value`); v != "yesterday 10:00" {
		t.Errorf("the form lost its input: from=%q", v)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); strings.Contains(loc, "yesterday") {
		t.Errorf("the refused query's URL was pushed: %s", loc)
	}
	// The next request that goes through clears the message.
	must(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-testid=explore-form] input[name=from]`), e.from.Format(time.RFC3339)),
		chromedp.Click(chromedp.CSS(`[data-testid=explore-form] button[type=submit]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#htmx-error [data-testid=error]`)),
	), "a good explore query after it")
}
