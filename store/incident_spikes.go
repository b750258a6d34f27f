package store

import (
	"context"
	"strings"
	"time"
)

// IncidentSpike is what a list of incidents says about each one's spike
// rather than its data window: when it began, how high it went, whether
// it is over, and when the data last arrived. It comes from the newest
// ready analysis (its onset and the hardest-hit model's impact) and, when
// there is none, from the spikes the detector attached to the incident.
type IncidentSpike struct {
	Source string // "analysis", "spikes" or "" (nothing known)
	Model  string
	Onset  *time.Time
	PeakMs float64 // 0 when unknown
	// PeakAtCeiling: the peak is its histogram's top bucket, a lower
	// bound (the impact's ceiling_ms, the spike's peak_at_ceiling).
	PeakAtCeiling bool
	Quantile      string // the peak's: "P50", "P95", "P99" or "mean"
	PeakAt        *time.Time
	BaselineMs    float64
	Ongoing       bool
	RecoveredAt   *time.Time // when the P99 came back (analysis), or the last spike's end
	// LastData is the newest point of the model's latency curves (P99,
	// P95, mean), whatever the analysis saw: nil when it has none stored.
	LastData *time.Time
}

// IncidentSpikes returns the spike summary of each incident in ids.
func (s *Store) IncidentSpikes(ctx context.Context, ids []int64) (map[int64]IncidentSpike, error) {
	out := make(map[int64]IncidentSpike, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `
		SELECT i.id, i.model,
		       r.onset, im.model, GREATEST(im.peak_p99_ms, im.during_p99_ms), im.peak_at, im.baseline_p99_ms, im.quantile, im.status, im.recovered_at,
		       COALESCE(im.ceiling_ms, 0),
		       sp.onset, sp.end_at, sp.ongoing, sp.role, sp.model, sp.peak_value, sp.peak_time, sp.baseline, sp.peak_at_ceiling
		FROM incidents i
		LEFT JOIN LATERAL (SELECT (result->>'onset')::timestamptz AS onset,
		                          -- jsonb_to_record refuses a JSON null (an analysis without impact).
		                          CASE WHEN jsonb_typeof(result->'impact'->0) = 'object' THEN result->'impact'->0 END AS impact
		                   `+newestReadyAnalysis+`) r ON true
		-- The hardest-hit model's impact, its fields read once.
		LEFT JOIN LATERAL jsonb_to_record(r.impact) AS im(model text, peak_p99_ms float8, during_p99_ms float8, peak_at timestamptz,
		                   baseline_p99_ms float8, quantile text, status text, recovered_at timestamptz, ceiling_ms float8) ON true
		-- One pass over the incident's spikes: the window aggregates span
		-- all of them; the row kept is the latency spike (of any quantile:
		-- the detector opens incidents from each) that rose most over its baseline.
		LEFT JOIN LATERAL (SELECT min(onset) OVER () AS onset, max(end_at) OVER () AS end_at,
		                          bool_or(ongoing) OVER () AS ongoing, role, model, peak_value, peak_time, baseline, peak_at_ceiling
		                   FROM spikes WHERE incident_id = i.id
		                   ORDER BY (role IN ('latency_p50', 'latency_p95', 'latency_p99', 'latency_mean')) DESC,
		                            peak_value / NULLIF(baseline, 0) DESC NULLS LAST, peak_value DESC LIMIT 1) sp ON true
		WHERE i.id = ANY($1)`, ids)
	if err != nil {
		return nil, wrap("incident spikes", err)
	}
	defer rows.Close()
	models := map[string]bool{}
	for rows.Next() {
		var (
			id                          int64
			scopeModel                  string
			aOnset, aPeakAt, aRecovered *time.Time
			aModel, aQuant, aStatus     *string
			aPeak, aBase                *float64
			sOnset, sEnd                *time.Time
			sOngoing                    *bool
			pRole, pModel               *string
			pPeak, pBase                *float64
			pAt                         *time.Time
			aCeiling                    float64
			pCeiling                    *bool
		)
		if err := rows.Scan(&id, &scopeModel, &aOnset, &aModel, &aPeak, &aPeakAt, &aBase, &aQuant, &aStatus, &aRecovered, &aCeiling,
			&sOnset, &sEnd, &sOngoing, &pRole, &pModel, &pPeak, &pAt, &pBase, &pCeiling); err != nil {
			return nil, wrap("incident spikes", err)
		}
		var sp IncidentSpike
		switch {
		case aOnset != nil:
			// An analysis that located no onset says nothing the
			// recorded spikes do not say better.
			sp.Source, sp.Onset, sp.PeakAt = "analysis", utcPtr(aOnset), utcPtr(aPeakAt)
			sp.Model = deref(aModel)
			sp.PeakMs = derefF(aPeak) // peak_at is this value's time
			sp.PeakAtCeiling = aCeiling > 0 && sp.PeakMs >= aCeiling
			sp.Quantile = deref(aQuant)
			if sp.Quantile == "" {
				sp.Quantile = "P99" // analyses stored before the field
			}
			sp.BaselineMs = derefF(aBase)
			switch {
			case aStatus != nil:
				sp.Ongoing = *aStatus != "recovered"
				if !sp.Ongoing {
					sp.RecoveredAt = utcPtr(aRecovered)
				}
			case sOnset != nil:
				// No impact row: whether it is over is the spikes' word.
				sp.Ongoing = sOngoing != nil && *sOngoing
				if !sp.Ongoing {
					sp.RecoveredAt = utcPtr(sEnd)
				}
			default:
				sp.Ongoing = true // nothing says it ended
			}
		case sOnset != nil:
			sp.Source, sp.Onset = "spikes", utcPtr(sOnset)
			sp.Ongoing = sOngoing != nil && *sOngoing
			if !sp.Ongoing {
				sp.RecoveredAt = utcPtr(sEnd)
			}
			if q, ok := latencyMeasure(deref(pRole)); ok {
				sp.Model, sp.PeakMs, sp.PeakAt, sp.BaselineMs = *pModel, derefF(pPeak), utcPtr(pAt), derefF(pBase)
				sp.PeakAtCeiling = pCeiling != nil && *pCeiling
				sp.Quantile = q
			}
		}
		if sp.Model == "" {
			sp.Model = scopeModel
		}
		if sp.Model != "" {
			models[sp.Model] = true
		}
		out[id] = sp
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("incident spikes", err)
	}
	if len(models) == 0 {
		return out, nil
	}
	// The newest point of each model's latency curves: one index probe
	// per series (points are keyed by series and time).
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	lrows, err := s.db.Query(ctx, `
		SELECT s.model, max(l.time)
		FROM series s
		CROSS JOIN LATERAL (SELECT p.time FROM points p WHERE p.series_id = s.id ORDER BY p.time DESC LIMIT 1) l
		WHERE s.role IN ('latency_p99', 'latency_p95', 'latency_mean') AND s.level = 'model' AND s.model = ANY($1)
		GROUP BY s.model`, names)
	if err != nil {
		return nil, wrap("incident spikes: last data", err)
	}
	defer lrows.Close()
	last := map[string]time.Time{}
	for lrows.Next() {
		var (
			m string
			t time.Time
		)
		if err := lrows.Scan(&m, &t); err != nil {
			return nil, wrap("incident spikes: last data", err)
		}
		last[m] = t.UTC()
	}
	if err := lrows.Err(); err != nil {
		return nil, wrap("incident spikes: last data", err)
	}
	for id, sp := range out {
		if t, ok := last[sp.Model]; ok {
			sp.LastData = &t
			out[id] = sp
		}
	}
	return out, nil
}

// latencyMeasure names a latency role's measure as lists quote it: "P99"
// for latency_p99, "mean" for latency_mean; ok is false for other roles.
func latencyMeasure(role string) (string, bool) {
	if q, ok := strings.CutPrefix(role, "latency_p"); ok {
		return "P" + q, true
	}
	if role == "latency_mean" {
		return "mean", true
	}
	return "", false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefF(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
