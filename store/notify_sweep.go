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
	FinishedAt time.Time // when it became ready (database clock)
}

// ReadyAnalysesWithin returns, for the incidents with an analysis that
// finished ready in the last window (database clock), most recent first,
// at most limit incidents: their first ready version (what analysis.ready
// is about), and each version of the window whose top cause differs from
// the ready version's before it (what cause.changed is about), newest
// first — leaving out those already queued for every webhook that wants
// them, which the sweep would only read again. An open incident is
// analysed again as its data grows — thousands of versions a day — so the
// comparison reads the small top_cause column, never the results.
func (s *Store) ReadyAnalysesWithin(ctx context.Context, window time.Duration, limit int) ([]ReadyVersion, error) {
	rows, err := s.db.Query(ctx, `
		WITH recent AS (
		  SELECT incident_id, max(finished_at) AS at FROM analyses
		  WHERE status = 'ready' AND finished_at >= now() - $1 * interval '1 second'
		  GROUP BY incident_id ORDER BY at DESC LIMIT $2),
		versions AS (
		  SELECT a.incident_id, a.version, a.finished_at, a.top_cause AS top,
		         COALESCE(lag(a.top_cause) OVER (PARTITION BY a.incident_id ORDER BY a.version), '') AS prev_top,
		         row_number() OVER (PARTITION BY a.incident_id ORDER BY a.version) AS n
		  FROM analyses a JOIN recent r ON r.incident_id = a.incident_id
		  WHERE a.status = 'ready')
		SELECT incident_id, version, top, prev_top, finished_at FROM versions v
		WHERE (n = 1 OR (finished_at >= now() - $1 * interval '1 second' AND top <> prev_top))
		  -- Not yet queued for some webhook that wants its event and was
		  -- there when it was ready (a newer one hears only what follows).
		  AND EXISTS (SELECT 1 FROM webhooks w
		    WHERE w.created_at <= v.finished_at
		      AND (CASE WHEN n = 1 THEN 'analysis.ready' ELSE 'cause.changed' END) = ANY (w.events)
		      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
		        WHERE d.webhook_id = w.id AND d.incident_id = v.incident_id
		          -- One analysis.ready per incident, whichever version it
		          -- was queued for (versions may finish out of order).
		          AND (CASE WHEN n = 1 THEN d.event = 'analysis.ready' ELSE d.analysis_version = v.version END)))
		ORDER BY finished_at DESC, incident_id, version DESC LIMIT $2 * 4`,
		window.Seconds(), limit)
	if err != nil {
		return nil, wrap("ready analyses within", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReadyVersion, error) {
		var r ReadyVersion
		err := row.Scan(&r.IncidentID, &r.Version, &r.Top, &r.PrevTop, &r.FinishedAt)
		r.FinishedAt = r.FinishedAt.UTC()
		return r, err
	})
	return out, wrap("ready analyses within", err)
}
