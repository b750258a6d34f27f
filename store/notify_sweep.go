package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// IncidentsChangedWithin returns the ids of incidents created or updated
// in the last window, newest change first, at most limit: what the webhook
// notifier's sweep re-notifies in case a change was noted only in memory
// (a restart, a database blip) and never queued. The window is read on the
// database's clock, which stamped the changes. (updated_at is set on
// creation too.)
func (s *Store) IncidentsChangedWithin(ctx context.Context, window time.Duration, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id FROM incidents WHERE updated_at >= now() - $1 * interval '1 second'
		ORDER BY updated_at DESC, id DESC LIMIT $2`, window.Seconds(), limit)
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

// ReadyAnalysesWithin returns, for the incidents with an analysis that
// finished ready in the last window (database clock), most recent first,
// at most limit incidents: their first ready version (what analysis.ready
// is about) and their latest with the top cause of the one before it
// (what cause.changed is about). An open incident is analysed again as
// its data grows — thousands of versions a day — so only these two are
// read, by primary key.
func (s *Store) ReadyAnalysesWithin(ctx context.Context, window time.Duration, limit int) ([]ReadyVersion, error) {
	rows, err := s.db.Query(ctx, `
		WITH recent AS (
		  SELECT incident_id, max(finished_at) AS at FROM analyses
		  WHERE status = 'ready' AND finished_at >= now() - $1 * interval '1 second'
		  GROUP BY incident_id ORDER BY at DESC LIMIT $2)
		SELECT r.incident_id, f.version, '', '' FROM recent r
		CROSS JOIN LATERAL (SELECT version FROM analyses
		  WHERE incident_id = r.incident_id AND status = 'ready' ORDER BY version LIMIT 1) f
		UNION ALL
		SELECT r.incident_id, l.version, l.top, COALESCE(p.top, '') FROM recent r
		CROSS JOIN LATERAL (SELECT version, COALESCE(result->'causes'->0->>'category', '') AS top FROM analyses
		  WHERE incident_id = r.incident_id AND status = 'ready' ORDER BY version DESC LIMIT 1) l
		LEFT JOIN LATERAL (SELECT COALESCE(result->'causes'->0->>'category', '') AS top FROM analyses
		  WHERE incident_id = r.incident_id AND status = 'ready' AND version < l.version ORDER BY version DESC LIMIT 1) p ON true`,
		window.Seconds(), limit)
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
