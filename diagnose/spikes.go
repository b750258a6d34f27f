package diagnose

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// latencyRoles are the quantiles spikes are detected on by default, and
// the mean where a series has no P99 or P95 (Triton without its summary).
var latencyRoles = []correlate.Role{correlate.RoleLatencyP99, correlate.RoleLatencyP95, correlate.RoleLatencyP50, correlate.RoleLatencyMean}

// SpikeQuery selects latency spikes from stored curves.
type SpikeQuery struct {
	From, To  time.Time
	Scope     correlate.Scope   // model etc.; empty = all
	Levels    []correlate.Level // default: model
	Direction correlate.Direction
	// Sensitivity is the detector's false-alarm budget; default medium.
	Sensitivity correlate.Sensitivity
	// HoldElevated keeps a rise ongoing while its curve still stands well
	// above the baseline it rose from (see holdElevated), and ends one
	// whose data stopped: the live detector's view, for incidents.
	HoldElevated bool
	// OngoingSince also returns spikes that began before From (not before
	// OngoingSince) and are still ongoing: a regression that began while
	// no data came in for longer than the detector's lookback is news
	// once the data catches up. Needs HoldElevated.
	OngoingSince time.Time
}

// Spikes detects spikes on the stored latency curves and returns those
// whose onset lies in [From, To), oldest first. Curves are read from as
// far before From as the detector's baseline needs (its trailing window,
// the days a seasonal baseline compares with, its tail's memory).
// Curves at a coarser step than 15 s are read from further back (the
// same number of points, up to 8 days).
func Spikes(ctx context.Context, st *store.Store, q SpikeQuery, slo SLOFunc) ([]correlate.Spike, error) {
	found, err := findSpikes(ctx, st, q, slo)
	if err != nil {
		return nil, err
	}
	out := make([]correlate.Spike, len(found))
	for i, f := range found {
		out[i] = f.Spike
	}
	return out, nil
}

// foundSpike is a detected spike with what the detector's opening rule
// reads from its curve.
type foundSpike struct {
	correlate.Spike
	// excess is the latency the spike has added so far, in units of its
	// baseline: Σ (v/baseline − 1)⁺ × step over its points. A spike held
	// at ×2 for a minute has added 60 s; at ×1.5 for three minutes, 90 s.
	excess time.Duration
}

func findSpikes(ctx context.Context, st *store.Store, q SpikeQuery, slo SLOFunc) ([]foundSpike, error) {
	levels := q.Levels
	if len(levels) == 0 {
		levels = []correlate.Level{correlate.LevelModel}
	}
	lead := max(curveLead, correlate.SpikeOptions{Step: 15 * time.Second}.History())
	curves, err := st.Curves(ctx, store.CurveFilter{From: q.From.Add(-lead), To: q.To, Roles: latencyRoles, Levels: levels, Scope: q.Scope})
	if err != nil {
		return nil, err
	}
	step := stepOf(curves)
	// Curves stored at a coarser step (a pull step of 1 min or more) need,
	// and at the same point count afford, more history: up to the 8 days
	// a daily baseline compares with.
	from := q.From.Add(-lead)
	if more := (correlate.SpikeOptions{Step: step}).History(); step > 15*time.Second && more > lead {
		from = q.From.Add(-more)
		curves, err = st.Curves(ctx, store.CurveFilter{From: from, To: q.To, Roles: latencyRoles, Levels: levels, Scope: q.Scope})
		if err != nil {
			return nil, err
		}
	}
	// Each curve's traffic, so that a held latency shift that follows a
	// traffic burst is not taken for a fault (correlate.SpikeOptions.Load).
	loads, err := st.Curves(ctx, store.CurveFilter{From: from, To: q.To, Roles: []correlate.Role{correlate.RoleQPS}, Levels: levels, Scope: q.Scope})
	if err != nil {
		return nil, err
	}
	loadOf := make(map[string][]correlate.Point, len(loads))
	for _, l := range loads {
		loadOf[levelScope(l)] = l.Points
	}
	quantiled := map[string]bool{} // series with a P99 or P95: their mean is not read
	for _, c := range curves {
		if c.Role == correlate.RoleLatencyP99 || c.Role == correlate.RoleLatencyP95 {
			quantiled[levelScope(c)] = true
		}
	}
	var out []foundSpike
	for _, c := range curves {
		if c.Role == correlate.RoleLatencyMean && quantiled[levelScope(c)] {
			continue
		}
		opt := correlate.SpikeOptions{Step: step, Direction: q.Direction, Sensitivity: q.Sensitivity, Quantile: true,
			Load: loadOf[levelScope(c)]}
		if slo != nil && c.Role != correlate.RoleLatencyP50 && c.Role != correlate.RoleLatencyMean {
			if v, ok := slo(c.Scope.Model); ok {
				opt.SLO = v
			}
		}
		for _, s := range correlate.DetectSpikes(c.Points, opt) {
			early := s.Onset.Before(q.From)
			if early && (q.OngoingSince.IsZero() || s.Onset.Before(q.OngoingSince)) || !s.Onset.Before(q.To) {
				continue
			}
			s.Role, s.Level, s.Scope = c.Role, c.Level, c.Scope
			if q.HoldElevated {
				s = holdElevated(c.Points, s, step)
				// A spike "ongoing" at a last point long past has lost its
				// data (an outage, a model gone): it ended as far as
				// anyone can tell, and its incident must be able to close.
				if n := len(c.Points); s.Ongoing && n > 0 && q.To.Sub(c.Points[n-1].Time()) > staleData {
					s.Ongoing = false
				}
			}
			if early && !s.Ongoing {
				continue
			}
			if c.Role != correlate.RoleLatencyMean {
				correlate.MarkCeiling(&s, c.Points)
			}
			out = append(out, foundSpike{Spike: s, excess: excess(c.Points, s, step)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Onset.Before(out[j].Onset) })
	return out, nil
}

// The alarm detector lets a lasting shift become the new level, so a rise
// that holds ends once its level window has caught up (some ten minutes):
// right for an alarm, which has said what it had to, but an incident must
// not resolve while its latency is still ×4. holdElevated keeps a rise
// that ended ongoing, up to the curve's last point, as long as the curve
// has not come back under holdRatio × the baseline it rose from for
// holdSpan (half its points) since; once it has, the spike ends at its
// last elevated point. A recovery is a recovery: a later daily rise does
// not revive a spike that had ended.
const (
	holdSpan  = 5 * time.Minute
	holdRatio = 1.3
	staleData = 10 * time.Minute
)

func holdElevated(points []correlate.Point, s correlate.Spike, step time.Duration) correlate.Spike {
	if s.Ongoing || s.Direction != correlate.Up || s.Baseline <= 0 || len(points) == 0 {
		return s
	}
	need := max(2, int(holdSpan/step)/2)
	endMs, below := s.End.UnixMilli(), 0
	lastHigh := int64(-1) // the last elevated point since the detector's end
	for _, p := range points {
		if p.T <= endMs || math.IsNaN(p.V) {
			continue
		}
		if p.V < holdRatio*s.Baseline {
			if below++; below >= need {
				// It came back down: the spike lasted until its last
				// elevated point.
				if lastHigh > endMs {
					s.End = time.UnixMilli(lastHigh).UTC()
				}
				return s
			}
		} else {
			below, lastHigh = 0, p.T
		}
	}
	if lastHigh < 0 {
		return s // nothing elevated since its end
	}
	// Still up, or on its way down but not down for long enough yet.
	s.End, s.Ongoing = points[len(points)-1].Time(), true
	return s
}

// levelScope keys a curve by its level and scope, role aside: a latency
// curve finds its traffic by it.
func levelScope(c correlate.Curve) string { return string(c.Level) + "|" + c.Scope.String() }

// excess sums how far a rising spike's points stand above its baseline,
// relative to it, each point counting for one step (0 for a drop).
func excess(points []correlate.Point, s correlate.Spike, step time.Duration) time.Duration {
	if s.Direction == correlate.Down || s.Baseline <= 0 {
		return 0
	}
	from, to := s.Start.UnixMilli(), s.End.UnixMilli()
	i := sort.Search(len(points), func(i int) bool { return points[i].T >= from })
	var sum float64
	for ; i < len(points) && points[i].T <= to; i++ {
		if r := points[i].V/s.Baseline - 1; r > 0 { // NaN compares false
			sum += r
		}
	}
	return time.Duration(sum * float64(step))
}
