package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// demoResult is what the investigation found.
type demoResult struct {
	incidentID int64
	url        string
	shareURL   string // read-only, no sign-in
	spike      *wire.ListedSpike
	from, to   time.Time
	analysis   wire.Analysis
}

// warmUp is how much history spike detection needs before it trusts a
// departure (its trailing baseline); spikes earlier than that are not
// what the demo is about.
const warmUp = 30 * time.Minute

// investigate does what the on-call would: list the latency spikes of the
// window, open an incident around the strongest one, and wait for its
// analysis.
func (d *demo) investigate(ctx context.Context, s *demoServer, fl *demoFleet) (demoResult, error) {
	d.p.step("incident")
	var res demoResult
	q := url.Values{"from": {fl.desc.Start.Format(time.RFC3339)}, "to": {fl.desc.End.Add(time.Second).Format(time.RFC3339)}}
	var spikes wire.SpikeList
	if err := s.api.do(ctx, http.MethodGet, "/api/v1/spikes?"+q.Encode(), "", nil, &spikes); err != nil {
		return res, err
	}
	res.spike = strongest(spikes.Spikes, fl.desc.Start.Add(warmUp))
	onset := fl.desc.Start.Add(fl.desc.End.Sub(fl.desc.Start) * 2 / 3)
	title := "P99 latency up"
	if res.spike != nil {
		onset = res.spike.Onset
		title = fmt.Sprintf("%s up", roleName(string(res.spike.Role)))
		if res.spike.Scope.Model != "" {
			title += " on " + res.spike.Scope.Model
		}
	} else if fl.truth.Onset != nil {
		onset = *fl.truth.Onset // no spike found: still show what the analysis makes of the window
	}
	// An hour and a half before the onset gives the analysis its
	// baseline; the incident lasts until now (the end of the data).
	res.from = maxTime(fl.desc.Start, onset.Add(-90*time.Minute)).Truncate(time.Minute)
	res.to = fl.desc.End
	body, _ := json.Marshal(wire.IncidentCreate{Title: title, Start: res.from.Format(time.RFC3339), End: res.to.Format(time.RFC3339)})
	var inc wire.Incident
	if err := s.api.do(ctx, http.MethodPost, "/api/v1/incidents", "application/json", bytes.NewReader(body), &inc); err != nil {
		return res, err
	}
	res.incidentID, res.url = inc.ID, inc.URL
	d.p.update("incident #%d opened; analysing", inc.ID)

	path := fmt.Sprintf("/api/v1/incidents/%d/analysis", inc.ID)
	deadline := time.Now().Add(d.opts.timeout)
	for {
		var a wire.Analysis
		if err := s.api.do(ctx, http.MethodGet, path, "", nil, &a); err != nil {
			return res, err
		}
		if a.Status == "ready" {
			if a.Result == nil {
				a.Result = &wire.Result{} // an empty analysis
			}
			res.analysis = a
			break
		}
		if a.Status == "failed" {
			return res, fmt.Errorf("analysis of incident %d failed: %s", inc.ID, a.Error)
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("analysis of incident %d not ready after %s (see waterline.log)", inc.ID, d.opts.timeout)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	// A share link opens the page without signing in: the quickest look.
	share, err := s.st.CreateShareLink(ctx, inc.ID)
	if err != nil {
		return res, err
	}
	res.shareURL = s.public + "/s/" + share
	top := "none"
	if len(res.analysis.Causes) > 0 {
		top = fmt.Sprintf("%s (%.2f)", res.analysis.Causes[0].Category, res.analysis.Causes[0].Score)
	}
	spikeNote := "no spike found; incident over the injected onset"
	if res.spike != nil {
		spikeNote = fmt.Sprintf("%s spike on %s at %s", roleName(string(res.spike.Role)), orFleet(res.spike.Scope.Model), fmtTime(res.spike.Onset))
	}
	d.p.done("%s; POST /api/v1/incidents → #%d; analysis ready, top cause %s", spikeNote, inc.ID, top)
	return res, nil
}

// strongest picks the spike to open the incident for: after the warm-up,
// the most severe, then the highest quantile, then the highest score.
func strongest(spikes []wire.ListedSpike, after time.Time) *wire.ListedSpike {
	rank := map[string]int{"page": 3, "ticket": 2, "info": 1}
	var c []wire.ListedSpike
	for _, sp := range spikes {
		if !sp.Onset.Before(after) {
			c = append(c, sp)
		}
	}
	if len(c) == 0 {
		return nil
	}
	// The tail is what the on-call is paged for: among equally severe
	// spikes prefer P99 over P95 over P50.
	roleRank := map[correlate.Role]int{correlate.RoleLatencyP99: 3, correlate.RoleLatencyP95: 2, correlate.RoleLatencyP50: 1}
	sort.SliceStable(c, func(i, j int) bool {
		if rank[c[i].Severity] != rank[c[j].Severity] {
			return rank[c[i].Severity] > rank[c[j].Severity]
		}
		if roleRank[c[i].Role] != roleRank[c[j].Role] {
			return roleRank[c[i].Role] > roleRank[c[j].Role]
		}
		return c[i].Score > c[j].Score
	})
	return &c[0]
}

// roleName is a curve role as a title reads it.
func roleName(role string) string {
	switch role {
	case "latency_p50":
		return "P50 latency"
	case "latency_p95":
		return "P95 latency"
	case "latency_p99", "":
		return "P99 latency"
	}
	return role
}

func orFleet(model string) string {
	if model == "" {
		return "the fleet"
	}
	return model
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// printSummary writes the demo's answer to stdout: the incident page, the
// ranked causes next to what was injected, and how to call the API.
func (d *demo) printSummary(s *demoServer, fl *demoFleet, r demoResult) {
	w := d.stdout
	fmt.Fprintf(w, "\nWaterline explained the simulated incident in %s.\n\n", seconds(d.p.elapsed()))
	fmt.Fprintf(w, "  incident page:  %s   (sign in with the admin token below)\n", r.url)
	fmt.Fprintf(w, "  share link:     %s   (read-only, no sign-in)\n\n", r.shareURL)
	for i, c := range r.analysis.Causes {
		// Causes at 0.05 or less are ruled out, as the page says; the
		// first is listed whatever its score.
		if i == 3 || i > 0 && c.Score <= 0.05 {
			break
		}
		label := "  ranked causes:"
		if i > 0 {
			label = ""
		}
		score := fmt.Sprintf("%.2f", c.Score)
		if c.Category == correlate.CatUnexplained { // a shortfall, not a likelihood
			score = "    "
		}
		fmt.Fprintf(w, "%-16s  %d. %-13s %s  %s\n", label, i+1, c.Category, score, oneLine(c.Summary, 90))
	}
	rank := 0
	for i, c := range r.analysis.Causes {
		if string(c.Category) == fl.truth.Category {
			rank = i + 1
			break
		}
	}
	verdict := "not among the causes"
	switch {
	case rank == 1:
		verdict = "ranked first"
	case rank > 1:
		verdict = fmt.Sprintf("ranked #%d", rank)
	}
	fmt.Fprintf(w, "  injected:        %s — %s\n", describeTruth(fl.truth), verdict)
	if r.analysis.P99BeforeMs > 0 {
		fmt.Fprintf(w, "  P99:             %.0f ms before → %.0f ms during\n", r.analysis.P99BeforeMs, r.analysis.P99DuringMs)
	}
	// RFC 3339 times are safe in a query string as they are, and easier
	// to read and edit there than percent-encoded.
	q := "from=" + r.from.Format(time.RFC3339) + "&to=" + r.to.Format(time.RFC3339)
	model := ""
	if r.spike != nil && r.spike.Scope.Model != "" {
		model = "&model=" + url.QueryEscape(r.spike.Scope.Model)
	}
	fmt.Fprintf(w, `
Admin API token for this demo (shown once):
  export WL=%s TOKEN=%s
  curl -sS -H "Authorization: Bearer $TOKEN" $WL/api/v1/incidents/%d
  curl -sS -H "Authorization: Bearer $TOKEN" $WL/api/v1/incidents/%d/analysis
  curl -sS -H "Authorization: Bearer $TOKEN" "$WL/api/v1/spikes?%s"
  curl -sS -H "Authorization: Bearer $TOKEN" "$WL/api/v1/timeline?%s%s"
  curl -sS $WL/api/openapi.json

`, s.public, s.token, r.incidentID, r.incidentID, q, q, model)
	what := "Waterline, Prometheus and Postgres"
	if d.env("DATABASE_URL") != "" {
		what = "Waterline and Prometheus"
	}
	leave := "removes " + d.dir
	if d.opts.keep {
		leave = "keeps " + d.dir
	}
	fmt.Fprintf(w, "Serving until Ctrl-C, which stops %s and %s.\n", what, leave)
}

// oneLine cuts s to n characters on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
