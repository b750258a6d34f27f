package store

import (
	"context"
	"time"
)

// pruneBatch bounds one prune statement: a long-open incident holds
// thousands of redundant versions, and one huge DELETE would hold its
// locks and WAL for long.
const pruneBatch = 5000

// PruneAnalyses drops the analysis versions nothing reads any more. An
// open incident is analysed again each time its data grows — every 30 s,
// some 2,880 versions a day of 50–200 kB each — and all but a few say the
// same as the one before. Kept: each incident's newest version, its first
// ready one (analysis.ready), every ready version whose top cause differs
// from the ready version before it (cause.changed, the sweep's history),
// every version finished within keepRecent (or not finished), every
// version a webhook delivery was made from, and the newest
// maxAnalysisFailures failed versions of an incident with no ready one
// (they count its retries: pruned, an always-failing resolved incident
// was tried again twice an hour for a week). Removing a version whose top
// cause equals its predecessor's changes no other version's predecessor's
// cause, so what the webhook sweep compares is unchanged. It returns how
// many versions it dropped. The newest ready version stays too: pages
// fall back to it when a later analysis failed.
func (s *Store) PruneAnalyses(ctx context.Context, keepRecent time.Duration) (int, error) {
	total := 0
	for {
		tag, err := s.db.Exec(ctx, `
			WITH ranked AS (
			  SELECT incident_id, version, status, finished_at,
			         top_cause IS DISTINCT FROM lag(top_cause) OVER w AS changed,
			         row_number() OVER w AS n,
			         row_number() OVER (PARTITION BY incident_id ORDER BY version DESC) AS from_newest
			  FROM analyses WHERE status = 'ready'
			  WINDOW w AS (PARTITION BY incident_id ORDER BY version)),
			newest AS (SELECT incident_id, max(version) AS version FROM analyses GROUP BY incident_id),
			failed AS (
			  SELECT incident_id, version, row_number() OVER (PARTITION BY incident_id ORDER BY version DESC) AS k
			  FROM analyses WHERE status = 'failed'),
			doomed AS (
			  SELECT a.incident_id, a.version FROM analyses a
			  JOIN newest nv ON nv.incident_id = a.incident_id AND a.version < nv.version
			  LEFT JOIN ranked r ON r.incident_id = a.incident_id AND r.version = a.version
			  LEFT JOIN failed fv ON fv.incident_id = a.incident_id AND fv.version = a.version
			  WHERE a.status IN ('ready', 'failed')
			    AND a.finished_at < now() - $1 * interval '1 second'
			    AND ((a.status = 'failed' AND (fv.k > $3
			          OR EXISTS (SELECT 1 FROM analyses rd WHERE rd.incident_id = a.incident_id AND rd.status = 'ready')))
			         OR (r.n > 1 AND r.from_newest > 1 AND NOT r.changed))
			    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.incident_id = a.incident_id AND d.analysis_version = a.version)
			  LIMIT $2)
			DELETE FROM analyses a USING doomed d WHERE a.incident_id = d.incident_id AND a.version = d.version`,
			keepRecent.Seconds(), pruneBatch, maxAnalysisFailures)
		if err != nil {
			return total, wrap("prune analyses", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}
