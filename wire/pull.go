package wire

import "time"

// PullStatus is the answer of GET /api/v1/pull/status: whether some serve
// replica holds the pull lease, each source's progress and lag, the gaps
// still open and those filled in the last day.
type PullStatus struct {
	LeaderActive bool         `json:"leader_active"`
	Sources      []PullSource `json:"sources"`
	OpenGaps     []PullGap    `json:"open_gaps"`
	FilledGaps   []PullGap    `json:"filled_gaps"`
	Summary      PullSummary  `json:"summary"`
}

// PullSource is one pulled source (a Prometheus query set) and its cursor.
type PullSource struct {
	Source      string     `json:"source"`
	Cursor      time.Time  `json:"cursor"`
	LastSuccess *time.Time `json:"last_success,omitempty"`
	LastAttempt *time.Time `json:"last_attempt,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	ErrorsTotal int64      `json:"errors_total"`
	PointsTotal int64      `json:"points_total"`
	LagSeconds  float64    `json:"lag_seconds"`
}

// PullGap is a range still to pull (an outage of the live loop, or a
// history job), or one filled recently.
type PullGap struct {
	ID       int64      `json:"id"`
	Source   string     `json:"source"`
	Reason   string     `json:"reason"` // outage or history
	From     time.Time  `json:"from"`
	To       time.Time  `json:"to"`
	Done     time.Time  `json:"done"`
	Error    string     `json:"error,omitempty"`
	OpenedAt time.Time  `json:"opened_at"`
	FilledAt *time.Time `json:"filled_at,omitempty"`
}

// PullSummary sums the sources up.
type PullSummary struct {
	Sources       int        `json:"sources"`
	Failing       int        `json:"failing"` // last attempt failed
	MaxLagSeconds float64    `json:"max_lag_seconds"`
	LastSuccess   *time.Time `json:"last_success,omitempty"`
	OpenGaps      int        `json:"open_gaps"`
	ErrorsTotal   int64      `json:"errors_total"`
	PointsTotal   int64      `json:"points_total"`
}
