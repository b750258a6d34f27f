package incident

import (
	"strconv"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// Permalink is the incident's page under publicURL (without a trailing
// slash).
func Permalink(publicURL string, id int64) string {
	return publicURL + "/incidents/" + strconv.FormatInt(id, 10)
}

// Summary is the incident as the API answers it and webhooks carry it.
func Summary(in store.Incident, publicURL string) wire.Incident {
	st := in.AnalysisStatus
	if st == "" {
		st = "none"
	}
	out := wire.Incident{
		ID: in.ID, Title: in.Title, Status: in.Status, Source: in.Source, StartedAt: in.Start, EndedAt: in.End,
		ResolvedAt: in.ResolvedAt, Scope: in.Scope, AnalysisStatus: st, URL: Permalink(publicURL, in.ID),
	}
	if h := in.Headline; h != nil {
		hl := *h
		out.Headline = &hl
	}
	if c := in.TopCause; c != nil {
		out.TopCause = &wire.CauseSummary{Category: c.Category, Score: c.Score, Summary: c.Summary}
	}
	return out
}

// ShareURL is the public URL of a share link's token.
func ShareURL(publicURL, token string) string { return publicURL + "/s/" + token }
