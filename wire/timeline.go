package wire

import (
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Curves and events on the wire are correlate's.
type (
	Curve = correlate.Curve
	Point = correlate.Point
	Event = correlate.Event
)

// Timeline is the answer of GET /api/v1/timeline: curves sorted by role
// and scope, all on one grid of StepSeconds-wide buckets (each point at
// its bucket's start), the window's events, and the latency spikes whose
// onset lies in it. Lists are never null.
type Timeline struct {
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	StepSeconds float64   `json:"step_seconds"`
	Scope       Scope     `json:"scope"`
	Curves      []Curve   `json:"curves"`
	Events      []Event   `json:"events"`
	// EventsTruncated: more events fell in the window than the timeline
	// lists (5,000); narrow the window or the scope to see them all.
	EventsTruncated bool    `json:"events_truncated"`
	Spikes          []Spike `json:"spikes"`
}

// ListedSpike is a spike as GET /api/v1/spikes lists it: for an ad-hoc
// PromQL query, with the labels of the series it was found on.
type ListedSpike struct {
	Spike
	Labels map[string]string `json:"labels,omitempty"`
}

// SpikeList is the answer of GET /api/v1/spikes.
type SpikeList struct {
	Spikes []ListedSpike `json:"spikes"`
}
