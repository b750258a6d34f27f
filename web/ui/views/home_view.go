package views

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// HomePage lists what needs attention: open incidents, recent spikes, and
// whether pulling from Prometheus is healthy.
type HomePage struct {
	Open, Recent []IncidentRow
	Spikes       []SpikeRow
	Pull         PullHealth
	// DetectorOn, DetectorOpens: what the background detector does here,
	// for the empty states.
	DetectorOn, DetectorOpens bool
	// OpenTotal is how many incidents are open in all; OpenOlder links
	// to the next page of them ("" on the last), OpenNewest says this is
	// not the first.
	OpenTotal  int
	OpenOlder  string
	OpenNewest bool
	// Refresh is this page's own address, which it reloads its lists
	// from; Updated the clock time it was made.
	Refresh, Updated string
}

// HomeOpenPageHref is the home page showing the open incidents after a
// cursor ("" for none).
func HomeOpenPageHref(cursor string) string {
	if cursor == "" {
		return ""
	}
	return "/?open_cursor=" + url.QueryEscape(cursor)
}

// IncidentRow is one incident in a list. It tells the spike, not the
// data window the incident was opened over: when it began, its peak, how
// long it lasted (or has lasted), and when data stopped arriving.
type IncidentRow struct {
	ID, Href, Title, Status   string
	TopCause, Score, Analysis string

	Onset    string // "07:27:45 UTC (2 h ago)"; "" when neither an analysis nor a spike says
	Peak     string // "1,307 ms at 07:31 UTC on chat-8b"
	Duration string // "51 min, recovered at 08:18 UTC" / "1 h 2 min so far"
	NoData   string // "no data since 08:30 UTC (2 h ago)" when the curves stop before now
	Window   string // the data window, when nothing is known of the spike
}

// staleData is how old a curve's last point may be before an open
// incident says data stopped arriving (a pull behind by more than this is
// "behind" on the pull health card too).
const staleData = 10 * time.Minute

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
	// NoSeries: pulled without error, yet not one point: the query
	// matches nothing in Prometheus (an exporter missing, labels that
	// differ), which otherwise looks like health.
	NoSeries bool
	// NoErrors: NoSeries of an error-rate source, where it is what a
	// healthy fleet shows (a status="5xx" series appears with the first
	// failed request): said, not flagged.
	NoErrors bool
}

// BuildIncidentRows formats incidents for a list; spikes holds what the
// store knows of each one's spike (store.IncidentSpikes), nil for none.
func BuildIncidentRows(list []store.Incident, spikes map[int64]store.IncidentSpike, now time.Time) []IncidentRow {
	out := make([]IncidentRow, 0, len(list))
	for _, in := range list {
		r := IncidentRow{ID: strconv.FormatInt(in.ID, 10), Href: "/incidents/" + strconv.FormatInt(in.ID, 10), Title: in.Title,
			Status: in.Status, Analysis: in.AnalysisStatus}
		if in.Headline != nil && in.Headline.Title != "" {
			r.Title = in.Headline.Title // the analysis' one line, as the page's title
		}
		spikeCells(&r, in, spikes[in.ID], now)
		if in.TopCause != nil {
			r.TopCause = CategoryLabel(in.TopCause.Category)
			if in.TopCause.Category != string(correlate.CatUnexplained) { // its score is a shortfall, not a likelihood
				r.Score = strconv.FormatFloat(in.TopCause.Score, 'f', 2, 64)
			}
		}
		if r.Analysis == "" {
			r.Analysis = "none"
		}
		out = append(out, r)
	}
	return out
}

// spikeCells fills a row's onset, peak, duration and data note.
func spikeCells(r *IncidentRow, in store.Incident, sp store.IncidentSpike, now time.Time) {
	stale := in.Status == store.IncidentOpen && sp.LastData != nil && now.Sub(*sp.LastData) > staleData
	if stale {
		r.NoData = "no data since " + clockOf(*sp.LastData, now) + " (" + Ago(*sp.LastData, now) + ")"
	}
	if sp.Onset == nil {
		end := now
		if in.End != nil {
			end = *in.End
		}
		r.Window = "window " + FmtTime(in.Start, now) + ", " + FmtDuration(end.Sub(in.Start)) + "; no spike located yet"
		return
	}
	onset := *sp.Onset
	r.Onset = FmtTime(onset, now) + " (" + Ago(onset, now) + ")"
	if sp.PeakMs > 0 {
		r.Peak = FmtMs(sp.PeakMs)
		if sp.PeakAtCeiling { // the histogram's top bucket: the true peak is higher
			r.Peak = "≥ " + r.Peak
		}
		if sp.Quantile != "" {
			r.Peak = sp.Quantile + " " + r.Peak
		}
		if sp.PeakAt != nil {
			r.Peak += " at " + clockOf(*sp.PeakAt, now)
		}
		if sp.Model != "" {
			r.Peak += " on " + sp.Model
		}
		if sp.BaselineMs > 0 {
			r.Peak += " (baseline " + FmtMs(sp.BaselineMs) + ")"
		}
	}
	switch {
	case !sp.Ongoing && sp.RecoveredAt != nil && sp.RecoveredAt.After(onset):
		r.Duration = FmtDuration(sp.RecoveredAt.Sub(onset)) + ", recovered at " + clockOf(*sp.RecoveredAt, now)
	case !sp.Ongoing:
		r.Duration = "recovered"
	case stale:
		// The spike was still on when the data stopped: it lasted at
		// least this long, and nothing says whether it still does.
		r.Duration = "at least " + FmtDuration(sp.LastData.Sub(onset)) + ", ongoing when the data stopped"
	case in.Status != store.IncidentOpen && in.ResolvedAt != nil && in.ResolvedAt.After(onset):
		r.Duration = FmtDuration(in.ResolvedAt.Sub(onset)) + " until resolved"
	default:
		r.Duration = FmtDuration(now.Sub(onset)) + " so far"
	}
}

// clockOf is "07:31 UTC", with the date when it is not ref's day.
func clockOf(t, ref time.Time) string {
	t = t.UTC()
	if t.Format("2006-01-02") != ref.UTC().Format("2006-01-02") {
		return t.Format("2006-01-02 15:04") + " UTC"
	}
	return t.Format("15:04") + " UTC"
}

// BuildSpikeRows formats recorded spikes; each links to the explorer
// around it, and to its incident: the one the detector attached it to,
// else an incident of the same model (or of no model) whose window holds
// its onset (one opened by hand or by Alertmanager).
func BuildSpikeRows(spikes []store.RecordedSpike, incidents []store.Incident, now time.Time) []SpikeRow {
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
		r := SpikeRow{Series: series, Onset: FmtTime(sp.Onset, now), Peak: RoleValue(sp.Role, sp.PeakValue), Baseline: RoleValue(sp.Role, sp.Baseline),
			Severity: sp.Severity, Href: st.WithWindow(sp.Onset.Add(-45*time.Minute), end.Add(15*time.Minute)).URL()}
		if sp.PeakAtCeiling { // the histogram's top bucket: the true peak is higher
			r.Peak = "≥ " + r.Peak
		}
		if sp.IncidentID != nil {
			r.Incident = "/incidents/" + strconv.FormatInt(*sp.IncidentID, 10)
		} else if in, ok := incidentHolding(incidents, sp); ok {
			r.Incident = "/incidents/" + strconv.FormatInt(in.ID, 10)
		}
		out = append(out, r)
	}
	return out
}

// incidentHolding finds the newest incident whose window holds the spike's
// onset and whose model (if it has one) is the spike's.
func incidentHolding(list []store.Incident, sp store.RecordedSpike) (store.Incident, bool) {
	var best store.Incident
	found := false
	for _, in := range list {
		if in.Start.After(sp.Onset) || in.End != nil && !in.End.After(sp.Onset) {
			continue
		}
		if in.Scope.Model != "" && in.Scope.Model != sp.Scope.Model {
			continue
		}
		if !found || in.Start.After(best.Start) {
			best, found = in, true
		}
	}
	return best, found
}

// RoleValue formats a value of a curve of role in the unit its lane
// uses ("864 ms", "12.5 req/s", "3.2%").
func RoleValue(role correlate.Role, v float64) string {
	for _, spec := range laneSpecs {
		for _, r := range spec.roles {
			if r != role {
				continue
			}
			if spec.unit == "ms" {
				return FmtMs(v)
			}
			sep := " "
			if spec.unit == "%" {
				sep = ""
			}
			return FmtNum(v*spec.scale) + sep + spec.unit
		}
	}
	return FmtNum(v)
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
			Lag: FmtDuration(time.Duration(s.LagSeconds) * time.Second), Behind: s.LagSeconds > 600,
			// The kube-state-metrics events source stores events, not points.
			NoSeries: s.LastSuccess != nil && s.PointsTotal == 0 && s.LastError == "" && !strings.HasPrefix(s.Source, "events/")}
		if r.NoSeries && strings.Contains(s.Source, "/error_rate") {
			r.NoSeries, r.NoErrors = false, true
		}
		if s.LastSuccess != nil {
			r.LastSuccess = Ago(*s.LastSuccess, now)
		} else {
			r.LastSuccess = "never"
		}
		h.Sources = append(h.Sources, r)
	}
	return h
}
