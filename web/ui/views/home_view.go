package views

import (
	"fmt"
	"strconv"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// HomePage lists what needs attention: open incidents, recent spikes, and
// whether pulling from Prometheus is healthy.
type HomePage struct {
	Open, Recent []IncidentRow
	Spikes       []SpikeRow
	Pull         PullHealth
}

// IncidentRow is one incident in a list.
type IncidentRow struct {
	ID, Href, Title, Status, Started, Duration, TopCause, Score, Analysis string
}

// SpikeRow is one recorded spike.
type SpikeRow struct {
	Series, Onset, Peak, Baseline, Severity, Href, Incident string
}

// PullHealth summarises the pull loop.
type PullHealth struct {
	Sources  []PullRow
	OpenGaps int
	Leader   bool
	Empty    string
	History  string // recent "waterline pull --from --to" jobs, in one sentence
}

// PullRow is one pull source.
type PullRow struct {
	Source, LastSuccess, Lag, Error, Points string
	Failing, Behind                         bool
}

// BuildIncidentRows formats incidents for a list.
func BuildIncidentRows(list []store.Incident, now time.Time) []IncidentRow {
	out := make([]IncidentRow, 0, len(list))
	for _, in := range list {
		r := IncidentRow{ID: strconv.FormatInt(in.ID, 10), Href: "/incidents/" + strconv.FormatInt(in.ID, 10), Title: in.Title,
			Status: in.Status, Started: FmtTime(in.Start, now) + " (" + Ago(in.Start, now) + ")", Analysis: in.AnalysisStatus}
		end := now
		if in.End != nil {
			end = *in.End
		}
		r.Duration = FmtDuration(end.Sub(in.Start))
		if in.TopCause != nil {
			r.TopCause = CategoryLabel(in.TopCause.Category)
			r.Score = strconv.FormatFloat(in.TopCause.Score, 'f', 2, 64)
		}
		if r.Analysis == "" {
			r.Analysis = "none"
		}
		out = append(out, r)
	}
	return out
}

// BuildSpikeRows formats recorded spikes; each links to the explorer
// around it.
func BuildSpikeRows(spikes []store.RecordedSpike, now time.Time) []SpikeRow {
	out := make([]SpikeRow, 0, len(spikes))
	for _, sp := range spikes {
		series := string(sp.Role)
		if sc := sp.Scope.String(); sc != "" {
			series += " " + sc
		}
		st := State{Base: "/explore", Scope: sp.Scope}
		st.Scope.Tenant = ""
		end := sp.End
		if end.Before(sp.Onset) {
			end = sp.Onset
		}
		r := SpikeRow{Series: series, Onset: FmtTime(sp.Onset, now), Peak: FmtNum(sp.PeakValue), Baseline: FmtNum(sp.Baseline),
			Severity: sp.Severity, Href: st.WithWindow(sp.Onset.Add(-45*time.Minute), end.Add(15*time.Minute)).URL()}
		if sp.IncidentID != nil {
			r.Incident = "/incidents/" + strconv.FormatInt(*sp.IncidentID, 10)
		}
		out = append(out, r)
	}
	return out
}

// BuildPullHealth formats pull progress; a source is "behind" when its
// cursor lags more than ten minutes. The ranges filled in the last day
// count too: history pulls count as pulling even with the live loop off.
func BuildPullHealth(ps wire.PullStatus, now time.Time) PullHealth {
	h := PullHealth{OpenGaps: ps.Summary.OpenGaps, Leader: ps.LeaderActive}
	srcs := ps.Sources
	var hist int
	var latestTo, latestDone time.Time
	for _, g := range ps.FilledGaps {
		if g.Reason != store.GapHistory || g.FilledAt == nil {
			continue
		}
		hist++
		if g.To.After(latestTo) {
			latestTo = g.To
		}
		if g.FilledAt.After(latestDone) {
			latestDone = *g.FilledAt
		}
	}
	if hist > 0 {
		h.History = fmt.Sprintf("History pulls filled %d source ranges in the last day, up to %s (finished %s).",
			hist, latestTo.UTC().Format("2006-01-02 15:04 UTC"), Ago(latestDone, now))
	}
	if len(srcs) == 0 && hist == 0 {
		h.Empty = "Nothing pulled yet: set PROMETHEUS_URL (and WATERLINE_PULL_INTERVAL), or run waterline pull --from --to."
	} else if len(srcs) == 0 {
		h.Empty = h.History + " The live pull loop is off (PROMETHEUS_URL and WATERLINE_PULL_INTERVAL turn it on)."
	}
	for _, s := range srcs {
		r := PullRow{Source: s.Source, Error: s.LastError, Failing: s.LastError != "", Points: FmtNum(float64(s.PointsTotal)),
			Lag: FmtDuration(time.Duration(s.LagSeconds) * time.Second), Behind: s.LagSeconds > 600}
		if s.LastSuccess != nil {
			r.LastSuccess = Ago(*s.LastSuccess, now)
		} else {
			r.LastSuccess = "never"
		}
		h.Sources = append(h.Sources, r)
	}
	return h
}
