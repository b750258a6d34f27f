package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ui"
)

// Share links: /s/{token} opens one incident read-only without signing
// in. The page carries Open Graph / Twitter tags early in <head> (chat
// crawlers send no cookie, read ~32 KB and run no script) and og:image
// points at /s/{token}/og.png. Neither names a tenant nor quotes a sample.

// handleIncidentShare is POST /incidents/{id}/share: create (or keep) the
// incident's share link and go back to the page, which shows it.
func (s *Server) handleIncidentShare(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	if _, err := s.store.ShareIncident(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/incidents/"+strconv.FormatInt(id, 10)+"#share")
}

// handleIncidentShareRevoke is POST /incidents/{id}/share/revoke.
func (s *Server) handleIncidentShareRevoke(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	if err := s.store.RevokeShare(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/incidents/"+strconv.FormatInt(id, 10))
}

// sharedIncident resolves the {token} of a share URL (404 when unknown or
// revoked).
func (s *Server) sharedIncident(c echo.Context) (int64, string, error) {
	tok := c.Param("token")
	id, err := s.store.SharedIncident(c.Request().Context(), tok)
	if err != nil {
		return 0, "", err
	}
	// A capability URL must not leak through Referer to linked sites.
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	c.Response().Header().Set("X-Robots-Tag", "noindex")
	return id, "/s/" + tok, nil
}

// handleSharePage is GET /s/{token}: the incident page, read-only.
func (s *Server) handleSharePage(c echo.Context) error {
	id, base, err := s.sharedIncident(c)
	if err != nil {
		return err
	}
	return s.incidentPage(c, id, base, true)
}

// handleShareSampleDetail is GET /s/{token}/samples/{rid}.
func (s *Server) handleShareSampleDetail(c echo.Context) error {
	id, _, err := s.sharedIncident(c)
	if err != nil {
		return err
	}
	return s.sampleDetail(c, id, false)
}

// tenantsOf lists every tenant name the incident's data mentions.
func (s *Server) tenantsOf(ctx context.Context, d *incidentData) []string {
	out := ui.AnalysisTenants(d.an)
	if d.inc.Scope.Tenant != "" {
		out = append(out, d.inc.Scope.Tenant)
	}
	from, to := d.defaultWindow(s.now())
	if ts, err := d.src.SampleTenants(ctx, from, to); err == nil {
		out = append(out, ts...)
	}
	return out
}

// openGraph is the unfurl card of a share page.
func (s *Server) openGraph(ctx context.Context, d *incidentData, base string) *ui.OpenGraph {
	in := ui.OGInput{ID: d.inc.ID, Title: d.inc.Title, URL: s.cfg.PublicURL + base, Image: s.cfg.PublicURL + base + "/og.png",
		Tenants: s.tenantsOf(ctx, d)}
	if d.an != nil {
		if len(d.an.Causes) > 0 {
			in.TopCategory, in.TopScore = string(d.an.Causes[0].Category), d.an.Causes[0].Score
		}
		in.P99Before, in.P99After = d.an.P99BeforeMs, d.an.P99DuringMs
	}
	return ui.BuildOpenGraph(in)
}

// handleShareOGImage is GET /s/{token}/og.png.
func (s *Server) handleShareOGImage(c echo.Context) error {
	id, base, err := s.sharedIncident(c)
	if err != nil {
		return err
	}
	return s.ogImage(c, id, base)
}

// handleIncidentOGImage is GET /incidents/{id}/og.png (signed in).
func (s *Server) handleIncidentOGImage(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	return s.ogImage(c, id, "/incidents/"+strconv.FormatInt(id, 10))
}

// ogImage renders the preview PNG: the P99 curve of the incident's main
// model with the onset and spikes, and the card's facts.
func (s *Server) ogImage(c echo.Context, id int64, base string) error {
	ctx := c.Request().Context()
	d, err := s.loadIncident(ctx, id, false)
	if err != nil {
		return err
	}
	og := s.openGraph(ctx, d, base)
	from, to := d.defaultWindow(s.now())
	in := ui.OGImageInput{Heading: "Incident #" + strconv.FormatInt(id, 10), Title: og.Title, From: from, To: to}
	for _, l := range og.Labels {
		switch l.K {
		case "Top cause":
			in.Cause = "Top cause: " + l.V
		case "P99 before → during":
			in.P99 = "P99 " + l.V
		}
	}
	if in.Cause == "" {
		in.Cause = "Analysis pending"
	}
	model := d.inc.Scope.Model
	if d.an != nil {
		in.Onset, in.Spikes = d.an.Onset, d.an.Spikes
		if model == "" && len(d.an.Scope.Models) > 0 {
			model = d.an.Scope.Models[0]
		}
	}
	f := store.CurveFilter{From: from, To: to, Step: uiStep(from, to), MaxRoles: timelineMaxRoles,
		Roles: []correlate.Role{correlate.RoleLatencyP99}, Levels: []correlate.Level{correlate.LevelModel, correlate.LevelFleet}}
	f.Scope.Model = model
	curves, err := d.src.Curves(ctx, f)
	if err != nil {
		return err
	}
	// Without a model, the model with the highest P99 stands for the fleet.
	best := -1.0
	for _, cv := range curves {
		for _, p := range cv.Points {
			if p.V > best {
				best, in.Curve = p.V, cv.Points
			}
		}
	}
	png, err := ui.OGImage(in)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, "image/png", png)
}
