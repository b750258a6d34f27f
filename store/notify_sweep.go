package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// IncidentsChangedWithin returns the ids of incidents created or updated
// in the last window, oldest change first, at most limit: what the webhook
// notifier's sweep re-notifies in case a change was noted only in memory
// (a restart, a database blip) and never queued. The window is read on the
// database's clock, which stamped the changes.
func (s *Store) IncidentsChangedWithin(ctx context.Context, window time.Duration, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id FROM incidents WHERE GREATEST(updated_at, created_at) >= now() - $1 * interval '1 second'
		ORDER BY GREATEST(updated_at, created_at), id LIMIT $2`, window.Seconds(), limit)
	if err != nil {
		return nil, wrap("incidents changed within", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, wrap("incidents changed within", err)
}

// ReadyVersion is a ready analysis version with its top cause and the top
// cause of the ready version before it ("" when none, or no cause).
type ReadyVersion struct {
	IncidentID int64
	Version    int
	Top        string
	PrevTop    string
}

// ReadyAnalysesWithin returns the analysis versions that finished ready in
// the last window (database clock), oldest first, at most limit, each with its previous
// ready version's top cause: what analysis.ready and cause.changed are
// decided from.
func (s *Store) ReadyAnalysesWithin(ctx context.Context, window time.Duration, limit int) ([]ReadyVersion, error) {
	rows, err := s.db.Query(ctx, `
		WITH since AS (SELECT now() - $1 * interval '1 second' AS t)
		SELECT incident_id, version, top, prev_top FROM (
		  SELECT a.incident_id, a.version, a.finished_at,
		         COALESCE(a.result->'causes'->0->>'category', '') AS top,
		         COALESCE(lag(a.result->'causes'->0->>'category') OVER w, '') AS prev_top
		  FROM analyses a
		  WHERE a.status = 'ready' AND a.incident_id IN (
		    SELECT incident_id FROM analyses, since WHERE status = 'ready' AND finished_at >= since.t)
		  WINDOW w AS (PARTITION BY a.incident_id ORDER BY a.version)
		) v, since WHERE finished_at >= since.t
		ORDER BY finished_at, incident_id, version LIMIT $2`, window.Seconds(), limit)
	if err != nil {
		return nil, wrap("ready analyses within", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReadyVersion, error) {
		var r ReadyVersion
		err := row.Scan(&r.IncidentID, &r.Version, &r.Top, &r.PrevTop)
		return r, err
	})
	return out, wrap("ready analyses within", err)
}
