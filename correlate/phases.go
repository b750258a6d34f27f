package correlate

import "time"

// phases cut the analysis window around the onset: "before" is the
// baseline the spike is compared with, "during" is the spike's main part.
type phases struct {
	Onset      time.Time
	BeforeFrom time.Time // onset − 60 min (or the window start)
	BeforeTo   time.Time // onset − 1 min: the minute before is left out, it may hold precursors
	DuringTo   time.Time // end of the spike's main part
}

// Phase lengths. Thirty minutes of "during" is long enough for a sustained
// spike and short enough that recovery does not dilute it.
const (
	beforeSpan     = 60 * time.Minute
	beforeGuard    = 1 * time.Minute
	duringMaxSpan  = 30 * time.Minute
	duringMinSpan  = 5 * time.Minute
	earliestBefore = 10 * time.Minute // shortest usable baseline
)

// newPhases places the phases around onset. spikeEnd (zero if unknown)
// shortens "during" to the spike; dataFrom bounds "before" (no data earlier).
func newPhases(onset, spikeEnd, dataFrom, windowTo time.Time) phases {
	p := phases{Onset: onset}
	p.BeforeFrom = onset.Add(-beforeSpan)
	if p.BeforeFrom.Before(dataFrom) {
		p.BeforeFrom = dataFrom
	}
	p.BeforeTo = onset.Add(-beforeGuard)
	if p.BeforeTo.Sub(p.BeforeFrom) < earliestBefore {
		p.BeforeTo = onset
	}
	end := onset.Add(duringMaxSpan)
	if !spikeEnd.IsZero() && spikeEnd.Before(end) {
		end = spikeEnd
	}
	if end.Sub(onset) < duringMinSpan {
		end = onset.Add(duringMinSpan)
	}
	if !windowTo.IsZero() && end.After(windowTo) && windowTo.After(onset) {
		end = windowTo
	}
	p.DuringTo = end
	return p
}

func (p phases) inBefore(t time.Time) bool { return !t.Before(p.BeforeFrom) && t.Before(p.BeforeTo) }
func (p phases) inDuring(t time.Time) bool { return !t.Before(p.Onset) && t.Before(p.DuringTo) }

// startingAt moves the phases' onset earlier to at, keeping "during"'s
// end: for the request samples when their own P99 rose before the curves
// showed it. A rate() curve over coarse scrapes shows a change up to a
// scrape interval late, two for replicas that just started (their
// counters need two scrapes before rate() sees them), and a cold start's
// worst minutes would otherwise fall in the samples' baseline.
func (p phases) startingAt(at time.Time) phases {
	if !at.Before(p.Onset) {
		return p
	}
	p.Onset = at
	if to := at.Add(-beforeGuard); to.Sub(p.BeforeFrom) >= earliestBefore {
		p.BeforeTo = to
	} else {
		p.BeforeTo = at
	}
	return p
}
