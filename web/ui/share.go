package ui

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// Share links: /s/{token} opens one incident read-only without signing
// in. The page carries Open Graph / Twitter tags early in <head> (chat
// crawlers send no cookie, read ~32 KB and run no script) and og:image
// points at /s/{token}/og.png. Neither names a tenant nor quotes a sample.

// CreateShareLink is POST /incidents/{id}/share: make a new share link
// (replacing the incident's previous one) and redirect to the incident
// page, which shows it once. Only the link's hash is kept, so the link
// rides to that page in a flash cookie — HttpOnly, SameSite=Strict, for
// this incident's path only, two minutes at most, cleared when read —
// not in the URL, where history and logs would keep it. Answering the
// POST with the page instead made a reload post again and kill the link
// just pasted into chat.
func (p *Pages) CreateShareLink(c echo.Context, id int64) error {
	tok, err := p.store.CreateShareLink(c.Request().Context(), id)
	if err != nil {
		return err
	}
	p.share.forget(id)
	p.pages.forget(id)
	c.SetCookie(p.newShareCookie(id, tok, 120))
	return c.Redirect(http.StatusSeeOther, incidentPath(id))
}

// newShareCookie carries a share link just made to the page that shows
// it (maxAge −1 clears it).
func (p *Pages) newShareCookie(id int64, tok string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: newShareCookie, Value: tok, Path: incidentPath(id), MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(p.cfg.PublicURL, "https://")}
}

const newShareCookie = "waterline_new_share"

// takeNewShare reads and clears the flash cookie of a link just made for
// incident id: its URL, or "" when there is none (or it is not this
// incident's live link).
func (p *Pages) takeNewShare(c echo.Context, id int64) string {
	ck, err := c.Cookie(newShareCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	c.SetCookie(p.newShareCookie(id, "", -1))
	if got, err := p.store.SharedIncident(c.Request().Context(), ck.Value); err != nil || got != id {
		return ""
	}
	return p.ShareURL(ck.Value)
}

// newShareURLKey carries a link just made to the page that shows it once.
const newShareURLKey = "waterline.new_share_url"

// ShareURL is the public URL of a share token.
func (p *Pages) ShareURL(tok string) string { return incident.ShareURL(p.cfg.PublicURL, tok) }

// RevokeShareLink is POST /incidents/{id}/share/revoke.
func (p *Pages) RevokeShareLink(c echo.Context, id int64) error {
	if err := p.store.RevokeShare(c.Request().Context(), id); err != nil {
		return err
	}
	p.share.forget(id)
	p.pages.forget(id)
	return c.Redirect(http.StatusSeeOther, incidentPath(id))
}

// sharedIncident resolves the {token} of a share URL (404 when unknown or
// revoked).
func (p *Pages) sharedIncident(c echo.Context) (int64, string, error) {
	tok := c.Param("token")
	id, err := p.store.SharedIncident(c.Request().Context(), tok)
	if err != nil {
		return 0, "", err
	}
	shareHeaders(c)
	return id, "/s/" + tok, nil
}

// shareHeaders: a capability URL must not leak through Referer to linked
// sites, nor be indexed.
func shareHeaders(c echo.Context) {
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	c.Response().Header().Set("X-Robots-Tag", "noindex")
}

// ShowSharedIncident is GET /s/{token}: the incident page, read-only, and
// its htmx fragments; answered from the share page cache (pagecache.go).
func (p *Pages) ShowSharedIncident(c echo.Context) error {
	ctx := c.Request().Context()
	tok := c.Param("token")
	ss, err := p.store.SharedState(ctx, tok)
	if err != nil {
		return err
	}
	shareHeaders(c)
	base := "/s/" + tok
	st, err := views.ParseState(base, c.QueryParams())
	if err != nil {
		return request.BadInput("", "%v", err)
	}
	st.Live = false
	key, ttl := sharePageKey(ss, base, pageVariant(c.Request()), st)
	pg, err := p.share.get(ctx, key, func() (*cachedPage, error) {
		return renderCached(c, ss.IncidentID, ttl, func(c echo.Context) error {
			return p.incidentPage(c, ss.IncidentID, base, true)
		})
	})
	if err != nil {
		return err
	}
	return serveCached(c, pg)
}

// ShowSharedSample is GET /s/{token}/samples/{rid}.
func (p *Pages) ShowSharedSample(c echo.Context) error {
	id, base, err := p.sharedIncident(c)
	if err != nil {
		return err
	}
	return p.sampleDetail(c, id, false, true, base)
}

// A share link reaches its incident and nothing else: its window (the
// page's default window, which a frozen incident's snapshot covers), never
// live data once frozen (live=1 is ignored), and only samples inside it.
// Anything outside answers 404, the same answer as an unknown token, so a
// holder cannot probe what else exists.

// clampShared limits a share page's state to the incident's window: a
// zoom inside it is kept, one reaching past it is moved inside, keeping
// its length (panning at the edge must not shrink the view), or cut to
// the window when longer, and one wholly outside it is a 404.
func (p *Pages) clampShared(d *incidentData, st views.State) (views.State, error) {
	st.Live = false
	if st.From.IsZero() && st.To.IsZero() {
		return st, nil
	}
	lo, hi := d.view().Window(p.now())
	from, to := st.From, st.To
	if from.IsZero() {
		from = lo
	}
	if to.IsZero() {
		to = hi
	}
	if !from.Before(hi) || !to.After(lo) || !from.Before(to) {
		return st, store.ErrNotFound
	}
	switch span := to.Sub(from); {
	case span >= hi.Sub(lo):
		from, to = lo, hi
	case from.Before(lo):
		from, to = lo, lo.Add(span)
	case to.After(hi):
		from, to = hi.Add(-span), hi
	}
	st.From, st.To = from, to
	return st, nil
}

// scopeShared keeps a share page to its incident's scope: an incident
// about one model (a tenant, a replica…) shows that one's requests,
// curves and changes, and may show the other models its analysis found
// slowed too; asking for any other is a 404. A fleet-wide incident's
// link shows the fleet.
func (p *Pages) scopeShared(d *incidentData, st views.State) (views.State, error) {
	want := d.inc.Scope
	for _, f := range []struct {
		incident string
		asked    *string
		also     []string
	}{
		{want.Model, &st.Scope.Model, sharedModels(d)},
		{want.Version, &st.Scope.Version, nil}, {want.Tenant, &st.Scope.Tenant, nil},
		{want.Replica, &st.Scope.Replica, nil}, {want.Node, &st.Scope.Node, nil},
	} {
		switch {
		case f.incident == "":
		case *f.asked == "":
			*f.asked = f.incident
		case *f.asked != f.incident && !slices.Contains(f.also, *f.asked):
			return st, store.ErrNotFound
		}
	}
	return st, nil
}

// sharedModels are the models a share link may show besides its
// incident's: those its analysis found slowed.
func sharedModels(d *incidentData) []string {
	if d.an == nil {
		return nil
	}
	return d.an.Scope.Models
}

// inSharedScope reports whether a sample belongs to what a share link
// shows (see scopeShared).
func (p *Pages) inSharedScope(d *incidentData, x correlate.Sample) bool {
	want := d.inc.Scope
	ok := func(incident, got string, also []string) bool {
		return incident == "" || got == incident || slices.Contains(also, got)
	}
	return ok(want.Model, x.Model, sharedModels(d)) && ok(want.Version, x.Version, nil) && ok(want.Tenant, x.Tenant, nil) &&
		ok(want.Replica, x.Replica, nil) && ok(want.Node, x.Node, nil)
}

// sharedAnalysis narrows d's analysis to what a share link shows: its
// aligned changes kept to the incident's scope (a change naming no model,
// tenant… applies to all) and to the link's window. The analysis reads
// every change of its window — another model's rollout, another tenant's
// quota change — but a link reaches its incident and nothing else. The
// analysis is the pages' cached one: it is copied, not changed.
func (p *Pages) sharedAnalysis(d *incidentData) {
	if d.an == nil {
		return
	}
	want := d.inc.Scope
	ok := func(incident, got string, also []string) bool {
		return incident == "" || got == "" || got == incident || slices.Contains(also, got)
	}
	lo, hi := d.view().Window(p.now())
	an := *d.an
	an.Events = nil
	for _, e := range d.an.Events {
		if ok(want.Model, e.Model, sharedModels(d)) && ok(want.Version, e.Version, nil) && ok(want.Tenant, e.Tenant, nil) &&
			ok(want.Replica, e.Replica, nil) && ok(want.Node, e.Node, nil) && !e.Time.Before(lo) && e.Time.Before(hi) {
			an.Events = append(an.Events, e)
		}
	}
	d.an = &an
}

// inSharedWindow reports whether a sample time lies in the window a share
// link shows.
func (p *Pages) inSharedWindow(d *incidentData, at time.Time) bool {
	lo, hi := d.view().Window(p.now())
	return !at.Before(lo) && at.Before(hi)
}

// tenantsOf lists every tenant name the incident's data mentions; ok is
// false when the samples' could not be read (the list is not complete).
func (p *Pages) tenantsOf(ctx context.Context, d *incidentData) (out []string, ok bool) {
	out = views.AnalysisTenants(d.an)
	if d.inc.Scope.Tenant != "" {
		out = append(out, d.inc.Scope.Tenant)
	}
	from, to := d.view().Window(p.now())
	ts, err := d.src.SampleTenants(ctx, from, to)
	return append(out, ts...), err == nil
}

// openGraph is the unfurl card of a share page.
func (p *Pages) openGraph(ctx context.Context, d *incidentData, base string) *views.OpenGraph {
	in := views.OGInput{ID: d.inc.ID, Title: d.inc.Title, URL: p.cfg.PublicURL + base, Image: p.cfg.PublicURL + base + "/og.png"}
	var complete bool
	if in.Tenants, complete = p.tenantsOf(ctx, d); !complete {
		// Fail closed: a title that cannot be scrubbed is left out (the
		// card is cached and served to every visitor, crawlers included).
		in.Title = ""
	}
	if d.an == nil && d.status == store.AnalysisFailed {
		in.Verdict = "Analysis failed"
	}
	if d.an != nil {
		if len(d.an.Causes) > 0 {
			in.TopCategory, in.TopScore = string(d.an.Causes[0].Category), d.an.Causes[0].Score
		}
		// A card must not name a "likely cause" the analysis does not
		// claim: no judged rise, or nothing standing out.
		switch {
		case len(d.an.Impact) == 0 && d.an.Headline.Title != "":
			in.Verdict = d.an.Headline.Title
		case in.TopCategory == string(correlate.CatUnexplained):
			in.Verdict = "No cause stands out"
		}
		in.P99Before, in.P99After = d.an.P99BeforeMs, d.an.P99DuringMs
		if len(d.an.Impact) > 0 { // the hardest-hit model's own figures
			im := d.an.Impact[0]
			in.Model, in.Quantile, in.Status = im.Model, im.Quantile, im.Status
			if im.BaselineP99Ms > 0 && im.DuringP99Ms > 0 {
				in.P99Before, in.P99After = im.BaselineP99Ms, im.DuringP99Ms
				in.AfterAtCeiling = correlate.AtCeiling(im.DuringP99Ms, im.CeilingMs)
			}
		}
		in.Onset, in.OnsetGapFrom = d.an.Onset, d.an.OnsetGapFrom
	}
	if d.inc.Status == store.IncidentResolved && in.Status == "ongoing" {
		// "ongoing" is at the end of the analysed data; the incident
		// has been resolved since.
		in.Status = "resolved"
	}
	return views.BuildOpenGraph(in)
}

// quantileRoles are the latency curves by the quantile an impact names.
var quantileRoles = map[string]correlate.Role{
	"P50": correlate.RoleLatencyP50, "P95": correlate.RoleLatencyP95, "P99": correlate.RoleLatencyP99, "mean": correlate.RoleLatencyMean,
}

// DrawSharedCard is GET /s/{token}/og.png.
func (p *Pages) DrawSharedCard(c echo.Context) error {
	id, base, err := p.sharedIncident(c)
	if err != nil {
		return err
	}
	return p.ogImage(c, id, base)
}

// DrawIncidentCard is GET /incidents/{id}/og.png (signed in).
func (p *Pages) DrawIncidentCard(c echo.Context, id int64) error {
	return p.ogImage(c, id, incidentPath(id))
}

// ogImage renders the preview PNG: the P99 curve of the incident's main
// model with the onset and spikes, and the card's facts.
func (p *Pages) ogImage(c echo.Context, id int64, base string) error {
	ctx := c.Request().Context()
	d, err := p.loadIncident(ctx, id, false)
	if err != nil {
		return err
	}
	if base != incidentPath(id) {
		p.sharedAnalysis(d)
	}
	og := p.openGraph(ctx, d, base)
	from, to := d.view().Window(p.now())
	heading := "Incident #" + strconv.FormatInt(id, 10)
	in := views.OGImageInput{Heading: heading, Title: strings.TrimPrefix(og.Title, heading+": "), From: from, To: to}
	for _, l := range og.Labels {
		switch l.K {
		case views.OGLabelCause:
			in.Cause = views.OGLabelCause + ": " + l.V
		case views.OGLabelVerdict:
			in.Cause = l.V
		default:
			in.P99 = views.OGFigures(l.K, l.V)
		}
	}
	if in.Cause == "" {
		in.Cause = "Analysis pending"
	}
	model := d.inc.Scope.Model
	role := correlate.RoleLatencyP99
	if d.an != nil {
		in.Onset, in.OnsetGapFrom, in.Spikes = d.an.Onset, d.an.OnsetGapFrom, d.an.Spikes
		if len(d.an.Impact) > 0 && (model == "" || model == d.an.Impact[0].Model) {
			// The curve the card's figures are of: the hardest-hit
			// model's, at the quantile measured for it.
			model = d.an.Impact[0].Model
			if r, ok := quantileRoles[d.an.Impact[0].Quantile]; ok {
				role, in.Quantile = r, d.an.Impact[0].Quantile
			}
		}
		if model == "" && len(d.an.Scope.Models) > 0 {
			model = d.an.Scope.Models[0]
		}
	}
	var curves []correlate.Curve
	// Without a model, the model with the highest curve stands for the
	// fleet — for a fleet-wide incident only: a replica's or a tenant's
	// is drawn with no curve rather than another model's.
	if sc := d.inc.Scope; model != "" || sc == (correlate.Scope{}) {
		f := store.CurveFilter{From: from, To: to, Step: incident.ChartStep(from, to), MaxRoles: store.PeakRoles,
			Roles: []correlate.Role{role}, Levels: []correlate.Level{correlate.LevelModel, correlate.LevelFleet}}
		f.Scope.Model = model
		if curves, err = d.src.Curves(ctx, f); err != nil {
			return err
		}
	}
	best := -1.0
	for _, cv := range curves {
		for _, pt := range cv.Points {
			if pt.V > best {
				best, in.Curve = pt.V, cv.Points
			}
		}
	}
	png, err := views.OGImage(in)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, "image/png", png)
}
