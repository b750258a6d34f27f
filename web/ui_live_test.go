package web_test

// The incident page while an incident is still open: analyses that fail
// and are tried again, share links opened mid-analysis, and the
// concentration rows of a scoped incident.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// openIncident opens an incident with no end (as the detector and
// Alertmanager do mid-incident) over the env's data, optionally scoped,
// and makes it the env's incident.
func (e *uiEnv) openIncident(t *testing.T, scope string) {
	t.Helper()
	body := fmt.Sprintf(`{"title":"chat p99 up (open)","start":%q`, e.from.Format(time.RFC3339))
	if scope != "" {
		body += `,"scope":` + scope
	}
	r := e.post("/api/v1/incidents", "application/json", []byte(body+"}"))
	var inc struct{ ID int64 }
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &inc) != nil {
		t.Fatalf("open incident: %d %s", r.status, r.body)
	}
	e.id = inc.ID
}

// failAnalysis records a new analysis version of the env's incident that
// failed, as the analyzer does when LoadInput errors (a Postgres blip, a
// timeout).
func (e *uiEnv) failAnalysis(t *testing.T, msg string) {
	t.Helper()
	ctx := context.Background()
	v, err := e.st.StartAnalysis(ctx, e.id, "test-failed")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.FinishAnalysis(ctx, e.id, v, nil, msg); err != nil {
		t.Fatal(err)
	}
}

// pollsStatus reports whether the page keeps an element polling the
// incident's status (the analysis banner's hx-get … every Ns).
func pollsStatus(p page, incidentPath string) bool {
	el := p.doc.Find(`#analysis-banner[hx-get]`)
	return el.Length() > 0 && strings.HasPrefix(el.AttrOr("hx-get", ""), incidentPath+"/status") &&
		strings.HasPrefix(el.AttrOr("hx-trigger", ""), "every ")
}

// An on-call who opened an open incident's page when its newest analysis
// had failed (a database blip, a timeout) kept reading "The analysis
// failed" for good: the page polled only while pending or ready, never
// after a failure, though the analyzer re-runs open incidents and a later
// version usually succeeds. A failed re-run of a version still shown was
// a red banner over a good analysis, with no word of a new attempt.
func TestOpenIncidentPageKeepsPollingAfterAFailedVersion(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, "")
	w := e.browser()
	w.login(e.read)

	// 1. The first analysis failed; the analyzer will retry it.
	e.failAnalysis(t, "load input: timeout: context deadline exceeded")
	p := w.get(e.incidentPath())
	if p.status != http.StatusOK {
		t.Fatalf("page: %d", p.status)
	}
	if !pollsStatus(p, e.incidentPath()) {
		t.Fatalf("open incident, first analysis failed (retried by the analyzer): the page does not poll %s/status (analysis-state %q)",
			e.incidentPath(), strings.TrimSpace(p.testid("analysis-state").Text()))
	}
	if !strings.Contains(p.testid("analysis-retrying").Text(), "tried again") {
		t.Errorf("the failed analysis does not say it is tried again: %q", p.doc.Find(`#analysis-banner`).Text())
	}
	// The poll does not reload the page while nothing succeeded.
	poll := p.doc.Find(`#analysis-banner`).AttrOr("hx-get", "")
	r := w.fragment(poll, "analysis-banner")
	if r.header.Get("HX-Refresh") != "" || !strings.Contains(r.body, "every 15s") {
		t.Errorf("polling a failed analysis: HX-Refresh %q, %s", r.header.Get("HX-Refresh"), r.body)
	}

	// 2. A version is ready (v2), then a re-analysis fails (v3): the page
	// shows v2 and keeps watching for v4.
	e.storeAnalysis(t)
	e.failAnalysis(t, "load input: connection reset by peer")
	p = w.get(e.incidentPath())
	if !pollsStatus(p, e.incidentPath()) {
		t.Errorf("open incident showing a ready version after a failed re-analysis: the page stops polling for newer versions (analysis-state %q, banner %q)",
			strings.TrimSpace(p.testid("analysis-state").Text()), strings.TrimSpace(p.doc.Find(`.banner.err`).Text()))
	}
	if p.doc.Find(`.banner.err`).Length() > 0 || p.testid("cause").Length() == 0 {
		t.Errorf("a failed re-run hides the good version behind an error banner %q (%d causes shown)", p.doc.Find(`.banner.err`).Text(), p.testid("cause").Length())
	}
	if s := p.testid("analysis-state").Text(); !strings.Contains(s, "v2") {
		t.Errorf("analysis-state %q does not name the version shown", s)
	}
	// 3. v4 succeeds: the poll offers it.
	e.storeAnalysis(t)
	poll = p.doc.Find(`#analysis-banner`).AttrOr("hx-get", "")
	r = w.fragment(poll, "analysis-banner")
	if !strings.Contains(r.body, "analysis-newer") || !strings.Contains(r.body, "version 4") {
		t.Errorf("v4 ready after the failed v3: the poll answers %s", r.body)
	}
}

// A share link pasted into the incident channel right after the incident
// opened never filled in: a read-only page had no poll and there was no
// /s/{token}/status route, so it said "Analysis: pending" for as long as
// the tab stayed open. It now polls its own status route, which reaches
// only the token's incident (there is no id to tamper with) and stops
// answering once the link is revoked.
func TestSharePageOpenedWhileAnalysingFillsIn(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, "")
	ctx := context.Background()
	if _, err := e.st.StartAnalysis(ctx, e.id, "running"); err != nil {
		t.Fatal(err)
	}
	share := e.sharePath(t)
	anon := e.browser()
	p := anon.get(share)
	if p.status != http.StatusOK {
		t.Fatalf("share page: %d", p.status)
	}
	poll := p.doc.Find(`#analysis-banner[hx-trigger^="every"]`).AttrOr("hx-get", "")
	if poll != share+"/status?shown=0" || !strings.Contains(p.testid("analysis-pending").Text(), "fills in") {
		t.Fatalf("share page during the analysis polls %q (banner %q)", poll, strings.TrimSpace(p.testid("analysis-pending").Text()))
	}
	r := anon.fragment(poll, "analysis-banner")
	if r.status != http.StatusOK || r.header.Get("HX-Refresh") != "" || !strings.Contains(r.body, share+"/status") ||
		strings.Contains(r.body, "/incidents/") {
		t.Errorf("share status while pending: %d HX-Refresh %q %s", r.status, r.header.Get("HX-Refresh"), r.body)
	}
	if got := r.header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("share status Referrer-Policy %q", got)
	}
	// Ready: the poll reloads the page, which now shows the analysis.
	e.storeAnalysis(t)
	if r := anon.fragment(poll, "analysis-banner"); r.header.Get("HX-Refresh") != "true" {
		t.Errorf("analysis ready: the share poll answers %d HX-Refresh %q %s", r.status, r.header.Get("HX-Refresh"), r.body)
	}
	if p := anon.get(share); p.testid("cause").Length() == 0 {
		t.Error("the reloaded share page shows no cause")
	}
	// A link reaches its incident and nothing else: an unknown token's
	// status is the unknown link's 404, and so is a revoked link's.
	unknown := anon.fragment("/s/"+strings.Repeat("A", len(share)-3)+"/status?shown=0", "analysis-banner")
	if unknown.status != http.StatusNotFound {
		t.Errorf("unknown token's status: %d", unknown.status)
	}
	if err := e.st.RevokeShare(ctx, e.id); err != nil {
		t.Fatal(err)
	}
	if r := anon.fragment(poll, "analysis-banner"); r.status != http.StatusNotFound || r.body != unknown.body {
		t.Errorf("revoked link's status: %d %s", r.status, r.body)
	}
}

// Every incident the spike detector opens is scoped to its model. On such
// a page a concentration row filtered the page but was never marked
// selected, and clicking it again did not clear it as the card promises:
// the row's link adds the incident's own scope (model=chat · tenant=…),
// while the row was compared with all of the page's filters (tenant=…).
func TestScopedIncidentConcentrationRowToggles(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, `{"model":"chat"}`)
	e.storeAnalysis(t)
	w := e.browser()
	w.login(e.read)
	// The share link's page had the same fault: it puts the scope back on
	// every request.
	share, anon := e.sharePath(t), e.browser()
	for _, c := range []struct {
		name, path string
		b          *browserClient
	}{{"signed in", e.incidentPath(), w}, {"share link", share, anon}} {
		p := c.b.get(c.path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: page: %d", c.name, p.status)
		}
		link := p.doc.Find(`[data-testid=conc-link]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Text() == "tenant="+tenantA
		})
		href, ok := link.Attr("href")
		if !ok {
			t.Fatalf("%s: no concentration row tenant=%s on the page", c.name, tenantA)
		}
		f := c.b.fragment(href, "filtered")
		if f.status != http.StatusOK {
			t.Fatalf("%s: filtered: %d", c.name, f.status)
		}
		if f.testid("sample-row").Length() == 0 {
			t.Fatalf("%s: the row's filter shows no samples", c.name)
		}
		sel := f.doc.Find(`tr[aria-selected] [data-testid=conc-link]`).Text()
		if sel != "tenant="+tenantA {
			t.Errorf("%s: after clicking row tenant=%s (URL %s) the selected row is %q", c.name, tenantA, href, sel)
		}
		again := f.doc.Find(`[data-testid=conc-link]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Text() == "tenant="+tenantA
		}).AttrOr("href", "")
		if again != c.path {
			t.Errorf("%s: clicking the selected row again links to %s, want the incident's own view %s", c.name, again, c.path)
		}
	}
}

// Dead filter controls on a scoped incident. A share link shows its
// incident's scope as a filter chip, but scopeShared puts the scope back
// on every request: whoever opened the link clicked "remove this filter"
// (or "clear filters"), the region reloaded, and the chip was still
// there. Signed in, "clear filters" with no filter of the reader's led
// to the page itself. Neither is offered now; the share page shows its
// scope as a fixed chip.
func TestScopedIncidentOffersNoDeadFilterControls(t *testing.T) {
	e := newUIEnv(t)
	e.openIncident(t, `{"model":"chat"}`)
	e.storeAnalysis(t)
	share := e.sharePath(t)
	anon := e.browser()
	p := anon.get(share)
	if p.status != http.StatusOK {
		t.Fatalf("share page: %d", p.status)
	}
	chips := p.testid("filter-chip")
	for i := 0; i < chips.Length(); i++ {
		c := chips.Eq(i)
		href := c.AttrOr("href", "")
		f := anon.fragment(href, "filtered")
		if f.status != http.StatusOK {
			t.Errorf("chip %q (%s): %d", c.Text(), href, f.status)
			continue
		}
		still := f.testid("filter-chip").FilterFunction(func(_ int, s *goquery.Selection) bool { return s.Text() == c.Text() })
		if still.Length() > 0 {
			t.Errorf("share page: removing the filter chip %q (link %s) reloads the same view with the chip still there", c.Text(), href)
		}
	}
	if sc := p.testid("scope-chip"); sc.Length() != 1 || sc.Text() != "model=chat" || sc.Is("a") {
		t.Errorf("share page: the incident's scope is not shown as a fixed chip (%d: %q)", sc.Length(), sc.Text())
	}
	if p.doc.Find(`[data-testid=filters] a.small`).Length() > 0 {
		t.Error("share page with only the incident's scope offers \"clear filters\"")
	}
	// Signed in, the same incident's "clear filters" link (next to its one
	// chip, the incident's scope) leads to the page itself.
	w := e.browser()
	w.login(e.read)
	f := w.fragment(e.incidentPath(), "filtered")
	clear := f.doc.Find(`[data-testid=filters] a.small`).FilterFunction(func(_ int, s *goquery.Selection) bool { return s.Text() == "clear filters" })
	if clear.Length() > 0 {
		t.Errorf("signed in, scoped incident with no filter of the reader's: \"clear filters\" links to the page itself (%s) and does nothing", clear.AttrOr("href", ""))
	}
	// The reader's own filter on top of the scope: removable, and clearable
	// back to the incident's view.
	f = w.fragment(e.incidentPath()+"?model=chat&tenant="+tenantA, "filtered")
	clear = f.doc.Find(`[data-testid=filters] a.small`).FilterFunction(func(_ int, s *goquery.Selection) bool { return s.Text() == "clear filters" })
	if href := clear.AttrOr("href", ""); href != e.incidentPath() {
		t.Errorf("signed in, tenant filter on the scoped incident: \"clear filters\" links to %q, want %s", href, e.incidentPath())
	}
}

// The links above the region (cause targets, impact tenant chips, the
// checklist's row chip) leave the window to the region's #view-window,
// which a zoom replaces with the region (the browser test of the same
// finding: TestBrowserCauseTargetAfterZoomKeepsTheWindow).
func TestLinksAboveTheRegionTakeTheRegionsWindow(t *testing.T) {
	e := newUIEnv(t)
	w := e.browser()
	w.login(e.read)
	from, to := e.spikeAt.Add(-10*time.Minute).UTC().Format(time.RFC3339), e.spikeAt.Add(10*time.Minute).UTC().Format(time.RFC3339)
	p := w.get(e.incidentPath() + "?from=" + from + "&to=" + to)
	if p.status != http.StatusOK {
		t.Fatalf("page: %d", p.status)
	}
	if got := p.doc.Find(`#filtered #view-window input[name=from]`).AttrOr("value", ""); got != from {
		t.Errorf("the region's window says from=%q, want %s", got, from)
	}
	for _, sel := range []string{"target", "tenant-chip", "step-row"} {
		links := p.testid(sel)
		if links.Length() == 0 && sel == "target" {
			t.Fatalf("no %s link on the page", sel)
		}
		links.Each(func(_ int, l *goquery.Selection) {
			if get := l.AttrOr("hx-get", ""); strings.Contains(get, "from=") || l.AttrOr("hx-include", "") != "#view-window input" {
				t.Errorf("%s link %q: hx-get %q carries the load-time window (hx-include %q)", sel, l.Text(), get, l.AttrOr("hx-include", ""))
			}
			if href := l.AttrOr("href", ""); !strings.Contains(href, "from=") {
				t.Errorf("%s link %q: the script-less href %q lost the window", sel, l.Text(), href)
			}
		})
	}
}
