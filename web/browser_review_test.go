package web_test

// The pages left open through an incident, in a browser: what their polls
// show when a dependency fails and comes back.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The home page reloads its lists every 15 s. When one reload failed (the
// database restarting), its error went to the page's error box — and
// stayed there: only a request the user makes clears that box, so once
// the database was back and the lists reloaded fine, "503: database
// unavailable" sat above fresh lists for the rest of the shift. A poll's
// own error now goes once the poll succeeds again.
func TestBrowserHomePollErrorClearsOnceThePollSucceeds(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/"),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`)),
	), "sign in to the home page")
	restore := cutDatabase(t, e)
	must(t, chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`!!document.querySelector('#htmx-error [data-testid=error]')`, chromedp.WithPollingTimeout(40*time.Second)),
	), "the home page's reload fails while the database is down")
	msg := evalString(t, ctx, `document.querySelector('#htmx-error').textContent`)
	restore()
	must(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=home-updated]').dataset.seen = '1'`),
		chromedp.Poll[chromedp.Void](`!document.querySelector('[data-testid=home-updated][data-seen]')`, chromedp.WithPollingTimeout(40*time.Second)),
	), "the home page reloads its lists once the database is back")
	if got := evalString(t, ctx, `document.querySelector('#htmx-error').textContent`); got != "" {
		t.Errorf("the lists reloaded fine, yet the page still says %q (it said %q while the database was down)", got, msg)
	}
}

// hideTab makes the page's tab hidden (hidden true) or shown again, as
// switching tabs does, and says so with a visibilitychange event.
func hideTab(hidden bool) chromedp.Action[chromedp.Void] {
	state := "visible"
	if hidden {
		state = "hidden"
	}
	return chromedp.Evaluate[chromedp.Void](`(() => {
		Object.defineProperty(document, 'hidden', {configurable: true, get: () => ` + strconv.FormatBool(hidden) + `});
		Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => '` + state + `'});
		document.dispatchEvent(new Event('visibilitychange'));
	})()`)
}

// An incident's home page and its pages stay open in background tabs
// through a shift, one per engineer and incident: each kept polling (the
// home page every 15 s, a pending analysis every 2 s) while nobody
// looked. A hidden tab polls no more, and catches up at once when it is
// shown again.
func TestBrowserHiddenTabDoesNotPoll(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/"),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`)),
		chromedp.Evaluate[chromedp.Void](`window.sent = 0; document.addEventListener('htmx:beforeSend', () => window.sent++)`),
		hideTab(true),
		chromedp.Sleep(20*time.Second),
	), "sign in to the home page, then hide its tab for 20 s")
	if n := evalString(t, ctx, `String(window.sent)`); n != "0" {
		t.Errorf("the hidden home page sent %s requests in 20 s", n)
	}
	must(t, chromedp.Do(ctx,
		hideTab(false),
		chromedp.Poll[chromedp.Void](`window.sent > 0`, chromedp.WithPollingTimeout(3*time.Second)),
	), "shown again, the home page reloads its lists at once")
}

// The incident page says how old its analysis is: "v1 · 07:05:17 UTC
// (1 min ago)". The page is not reloaded while it is open, and an
// engineer who came back to its tab two hours later still read "1 min
// ago": an analysis that had stopped being re-run looked current. The
// relative part now moves on with the browser's clock.
func TestBrowserAnalysisAgeMovesOnWhileThePageIsOpen(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+e.incidentPath()),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=analysis-state]`)),
	), "sign in to the incident page")
	// The analysis' time comes from Postgres' clock and the page's "now"
	// from the server's, which the suites shift by ±400 days (testclock):
	// the element is set to a minute old by the server's clock, so the
	// test reads only how it moves with the browser's.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const el = document.querySelector('[data-testid=analysis-state] time[data-ago]');
		el.dateTime = new Date(Number(el.dataset.now) - 61000).toISOString();
		el._t0 = Date.now();
		document.dispatchEvent(new Event('visibilitychange'));
	})()`)), "set the analysis a minute old")
	before := evalString(t, ctx, `document.querySelector('[data-testid=analysis-state]').textContent.trim()`)
	if !strings.Contains(before, "(1 min ago)") {
		t.Fatalf("a minute-old analysis reads %q", before)
	}
	must(t, chromedp.Do(ctx,
		hideTab(true),
		chromedp.Evaluate[chromedp.Void](`(() => { const real = Date.now; Date.now = () => real.call(Date) + 2 * 3600 * 1000; })()`),
		hideTab(false),
		chromedp.Sleep(500*time.Millisecond),
	), "leave the tab for two hours, then come back to it")
	after := evalString(t, ctx, `document.querySelector('[data-testid=analysis-state]').textContent.trim()`)
	if !strings.Contains(after, "(2 h ago)") {
		t.Errorf("two hours after it was loaded the page says the analysis is from %q (it said %q)", after, before)
	}
}

// When Waterline itself could not be reached (its pod restarting, the
// VPN dropped), the home page's reloads failed without a word: it kept
// showing its last lists, "refreshes every 15s", as if they were
// current. It says so now, until a reload goes through again.
func TestBrowserHomeSaysWhenTheServerCannotBeReached(t *testing.T) {
	e := newUIEnv(t)
	ctx := browser(t)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(e.srv.URL+"/"),
		signIn(e.read),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=open-incidents]`)),
	), "sign in to the home page")
	e.srv.CloseClientConnections()
	e.srv.Listener.Close()
	must(t, chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`!!document.querySelector('#htmx-error [data-testid=error]')`, chromedp.WithPollingTimeout(40*time.Second)),
	), "the home page says its reload could not reach the server")
}
