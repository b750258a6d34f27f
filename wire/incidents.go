package wire

import (
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Scope is the part of the fleet something concerns.
type Scope = correlate.Scope

// IncidentCreate is the body of POST /api/v1/incidents: a window (and a
// scope) to explain. Times are RFC 3339 text so the server can name a
// malformed one.
type IncidentCreate struct {
	Title string `json:"title"`
	Start string `json:"start"`
	End   string `json:"end,omitempty"`
	Scope *Scope `json:"scope,omitempty"`
}

// Incident is the flat, ticket-friendly incident of DESIGN §4: what GET
// /api/v1/incidents/{id} answers and what webhooks carry.
type Incident struct {
	ID         int64         `json:"id"`
	Title      string        `json:"title"`
	Status     string        `json:"status"` // open or resolved
	Source     string        `json:"source"` // manual, alertmanager or detector
	StartedAt  time.Time     `json:"started_at"`
	EndedAt    *time.Time    `json:"ended_at"`
	ResolvedAt *time.Time    `json:"resolved_at"`
	Scope      Scope         `json:"scope"`
	TopCause   *CauseSummary `json:"top_cause"`
	// Headline is the newest analysis' one-line story (the model hit
	// hardest and what happened to it), the same the page's title says;
	// absent until an analysis has one.
	Headline       *Headline `json:"headline,omitempty"`
	AnalysisStatus string    `json:"analysis_status"` // none, pending, ready or failed
	URL            string    `json:"url"`             // the permalink
}

// CauseSummary is the part of the top cause a ticket shows.
type CauseSummary struct {
	Category string  `json:"category"`
	Score    float64 `json:"score"`
	Summary  string  `json:"summary"`
}

// IncidentPage is the answer of GET /api/v1/incidents: newest first, with
// a cursor for the next page.
type IncidentPage struct {
	Incidents  []Incident `json:"incidents"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// The analysis is correlate's result as it is: these are its parts.
type (
	Result            = correlate.Analysis
	Window            = correlate.Window
	Spike             = correlate.Spike
	ScopeReport       = correlate.ScopeReport
	Cause             = correlate.Cause
	Target            = correlate.Target
	Evidence          = correlate.Evidence
	StageShare        = correlate.StageShare
	Concentration     = correlate.Concentration
	AlignedEvent      = correlate.AlignedEvent
	ReplicaComparison = correlate.ReplicaComparison
	CurveDeviation    = correlate.CurveDeviation
	Impact            = correlate.Impact
	Headline          = correlate.Headline
	ScopeEntry        = correlate.ScopeEntry
	Pool              = correlate.Pool
	RequestLength     = correlate.RequestLength
)

// Analysis is the answer of GET /api/v1/incidents/{id}/analysis: its
// status, and once one is ready the result itself, inline. While the
// first analysis runs the answer is only {"status": "pending",
// "incident_id"}; while a newer version is computed the previous one is
// served with recomputing true; a failed one carries its error.
type Analysis struct {
	Status      string     `json:"status"` // pending, ready or failed
	IncidentID  int64      `json:"incident_id"`
	Version     int        `json:"version,omitempty"`
	Recomputing bool       `json:"recomputing,omitempty"`
	ComputedAt  *time.Time `json:"computed_at,omitempty"`
	Error       string     `json:"error,omitempty"`
	*Result                // nil until one is ready
}
