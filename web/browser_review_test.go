package web_test

// The pages left open through an incident, in a browser: what their polls
// show when a dependency fails and comes back.

import (
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
