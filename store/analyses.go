package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnalysisRecord is one version of an incident's analysis. Result is the
// JSON of a correlate.Analysis once Status is "ready".
type AnalysisRecord struct {
	IncidentID   int64
	Version      int
	Status       string // pending, ready, failed
	InputsDigest string
	Result       json.RawMessage
	Error        string
	CreatedAt    time.Time
	FinishedAt   *time.Time
}

// Analysis statuses.
const (
	AnalysisPending = "pending"
	AnalysisReady   = "ready"
	AnalysisFailed  = "failed"
)

// LatestAnalysis returns the newest analysis of an incident, or ErrNotFound.
func (s *Store) LatestAnalysis(ctx context.Context, incidentID int64) (AnalysisRecord, error) {
	return s.scanAnalysis(s.db.QueryRow(ctx, `
		SELECT incident_id, version, status, inputs_digest, result, error, created_at, finished_at
		FROM analyses WHERE incident_id = $1 ORDER BY version DESC LIMIT 1`, incidentID))
}

// LatestReadyAnalysis returns the newest finished analysis, or ErrNotFound.
// AnalysisVersions is what a page polling an incident's analysis needs,
// without reading any result: the newest version and its status, and the
// newest ready version (0: none). ErrNotFound when no analysis was started.
func (s *Store) AnalysisVersions(ctx context.Context, incidentID int64) (latest int, status string, ready int, err error) {
	err = s.db.QueryRow(ctx, `
		SELECT version, status, COALESCE((SELECT max(version) FROM analyses WHERE incident_id = $1 AND status = 'ready'), 0)
		FROM analyses WHERE incident_id = $1 ORDER BY version DESC LIMIT 1`, incidentID).Scan(&latest, &status, &ready)
	return latest, status, ready, wrap("analysis versions", err)
}

func (s *Store) LatestReadyAnalysis(ctx context.Context, incidentID int64) (AnalysisRecord, error) {
	return s.scanAnalysis(s.db.QueryRow(ctx, `
		SELECT incident_id, version, status, inputs_digest, result, error, created_at, finished_at
		FROM analyses WHERE incident_id = $1 AND status = 'ready' ORDER BY version DESC LIMIT 1`, incidentID))
}

func (s *Store) scanAnalysis(row interface{ Scan(...any) error }) (AnalysisRecord, error) {
	var a AnalysisRecord
	err := row.Scan(&a.IncidentID, &a.Version, &a.Status, &a.InputsDigest, &a.Result, &a.Error, &a.CreatedAt, &a.FinishedAt)
	if err != nil {
		return AnalysisRecord{}, wrap("analysis", err)
	}
	return a, nil
}

// StartAnalysis records a new pending version for an incident and returns
// its number.
func (s *Store) StartAnalysis(ctx context.Context, incidentID int64, digest string) (int, error) {
	var v int
	err := s.db.QueryRow(ctx, `
		INSERT INTO analyses (incident_id, version, status, inputs_digest)
		SELECT $1, COALESCE(max(version), 0) + 1, 'pending', $2 FROM analyses WHERE incident_id = $1
		RETURNING version`, incidentID, digest).Scan(&v)
	return v, wrap("start analysis", err)
}

// maxAnalysisFailures is how many failed versions a resolved incident's
// analysis gets before it is left failed: one that always fails would
// otherwise load its data every few minutes for a week.
const maxAnalysisFailures = 3

// ResolvedWithoutReadyAnalysis lists resolved incidents (newest first, at
// most limit) that have no ready analysis and whose last attempt began
// more than pause ago: it failed, or its analyzer died before finishing.
// Open incidents are analysed again anyway; these would show "failed" or
// "pending" for good. Only incidents changed in the last week, and with
// fewer than maxAnalysisFailures failed versions, are looked at.
func (s *Store) ResolvedWithoutReadyAnalysis(ctx context.Context, pause time.Duration, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT i.id FROM incidents i
		WHERE i.status = 'resolved' AND i.updated_at > now() - interval '7 days'
		  AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.incident_id = i.id AND a.status = 'ready')
		  AND (SELECT count(*) FROM analyses a WHERE a.incident_id = i.id AND a.status = 'failed') < $3
		  AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.incident_id = i.id AND a.created_at > now() - $1 * interval '1 second')
		ORDER BY i.id DESC LIMIT $2`, pause.Seconds(), limit, maxAnalysisFailures)
	if err != nil {
		return nil, wrap("resolved without ready analysis", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, wrap("resolved without ready analysis", err)
}

// DropAbandonedAnalyses deletes the pending versions of resolved
// incidents whose analyzer died (older than analysisStale) while an
// earlier version is ready: nothing will finish them (a resolved incident
// is not recomputed), and the page and the API said "recomputing" for
// ever. It returns how many it dropped.
func (s *Store) DropAbandonedAnalyses(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, `
		DELETE FROM analyses a USING incidents i
		WHERE a.incident_id = i.id AND i.status = 'resolved' AND a.status = 'pending'
		  AND a.created_at < now() - $1 * interval '1 second'
		  AND EXISTS (SELECT 1 FROM analyses r WHERE r.incident_id = a.incident_id AND r.status = 'ready' AND r.version < a.version)`,
		analysisStale.Seconds())
	if err != nil {
		return 0, wrap("drop abandoned analyses", err)
	}
	return tag.RowsAffected(), nil
}

// ErrAnalysisBusy means StartAnalysisOnce started nothing: another
// analyzer (a replica) is computing the incident now, or its newest
// version already read the same inputs.
var ErrAnalysisBusy = errors.New("analysis busy or unchanged")

// analysisStale is how long a pending version keeps other analyzers off
// its incident: past it, its analyzer is taken for dead.
const analysisStale = 2 * time.Minute

// StartAnalysisOnce is StartAnalysis for analyzers that run side by side
// (one per serve replica): it records a new pending version unless the
// newest version is still pending (and younger than analysisStale) or,
// without force, is ready from the same digest — ErrAnalysisBusy then.
// Two analyzers racing on one incident computed two versions, the second
// one's "previous" read before the first was stored.
func (s *Store) StartAnalysisOnce(ctx context.Context, incidentID int64, digest string, force bool) (int, error) {
	var v int
	err := s.db.QueryRow(ctx, `
		WITH last AS (SELECT version, status, inputs_digest, created_at FROM analyses
		              WHERE incident_id = $1 ORDER BY version DESC LIMIT 1)
		INSERT INTO analyses (incident_id, version, status, inputs_digest)
		SELECT $1, COALESCE((SELECT version FROM last), 0) + 1, 'pending', $2
		WHERE NOT EXISTS (SELECT 1 FROM last WHERE status = 'pending' AND created_at > now() - $4 * interval '1 second')
		  AND ($3 OR NOT EXISTS (SELECT 1 FROM last WHERE status = 'ready' AND inputs_digest = $2))
		RETURNING version`, incidentID, digest, force, analysisStale.Seconds()).Scan(&v)
	switch err = translate(err); {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict): // nothing inserted; lost the race for the version
		return 0, ErrAnalysisBusy
	case err != nil:
		return 0, fmt.Errorf("store: start analysis: %w", err)
	}
	return v, nil
}

// ReadyAnalysisBefore returns the newest ready version of an incident's
// analysis older than version, or ErrNotFound.
func (s *Store) ReadyAnalysisBefore(ctx context.Context, incidentID int64, version int) (AnalysisRecord, error) {
	return s.scanAnalysis(s.db.QueryRow(ctx, `
		SELECT incident_id, version, status, inputs_digest, result, error, created_at, finished_at
		FROM analyses WHERE incident_id = $1 AND status = 'ready' AND version < $2 ORDER BY version DESC LIMIT 1`, incidentID, version))
}

// FinishAnalysis stores the result (or the failure) of a version.
func (s *Store) FinishAnalysis(ctx context.Context, incidentID int64, version int, result []byte, failure string) error {
	status := AnalysisReady
	if failure != "" {
		status = AnalysisFailed
	}
	_, err := s.db.Exec(ctx, `UPDATE analyses SET status = $3, result = $4, error = $5, finished_at = now(),
		top_cause = COALESCE($4::jsonb->'causes'->0->>'category', '')
		WHERE incident_id = $1 AND version = $2`, incidentID, version, status, result, failure)
	return wrap("finish analysis", err)
}

// WindowDigest fingerprints the data an analysis of [from, to) reads —
// sample and event counts and newest times, and pull progress into the
// window — so the analyser can tell cheaply whether anything new arrived
// since the last analysis. It uses only indexed ranges and the small
// pull_cursors and pull_gaps tables.
//
// Pull progress counts only where it can write into the window: live
// sources whose cursor is not yet past it (plus digestPullMargin for the
// re-read overlap), and history or outage fills overlapping it. A live
// pull hours past a postmortem's window changed the digest every round,
// and the incident was re-analysed every 30 s.
func (s *Store) WindowDigest(ctx context.Context, from, to time.Time) (string, error) {
	var (
		nSamples, nEvents, points, nGaps int64
		maxSample, maxEvent, pull, gaps  *time.Time
	)
	err := s.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM samples WHERE time >= $1 AND time < $2),
		       (SELECT max(time) FROM samples WHERE time >= $1 AND time < $2),
		       (SELECT count(*) FROM events WHERE time >= $1 - interval '1 hour' AND time < $2),
		       (SELECT max(ingested_at) FROM events WHERE time >= $1 - interval '1 hour' AND time < $2),
		       (SELECT LEAST(max(cursor_at), $3) FROM pull_cursors),
		       (SELECT COALESCE(sum(points_total) FILTER (WHERE cursor_at < $3), 0) FROM pull_cursors),
		       (SELECT count(*) FROM pull_gaps WHERE from_at < $2 AND to_at > $1 - interval '1 hour'),
		       (SELECT max(GREATEST(done_to, filled_at)) FROM pull_gaps WHERE from_at < $2 AND to_at > $1 - interval '1 hour')`,
		from, to, to.Add(digestPullMargin)).
		Scan(&nSamples, &maxSample, &nEvents, &maxEvent, &pull, &points, &nGaps, &gaps)
	if err != nil {
		return "", wrap("window digest", err)
	}
	f := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("s%d@%s e%d@%s p%d@%s g%d@%s", nSamples, f(maxSample), nEvents, f(maxEvent), points, f(pull), nGaps, f(gaps)), nil
}

// digestPullMargin is how far past a window a live pull's cursor may be
// and still write into it: the pull re-reads an overlap (2 min by
// default) before its cursor.
const digestPullMargin = 15 * time.Minute

// AnalysisVersion returns one version of an incident's analysis, or ErrNotFound.
func (s *Store) AnalysisVersion(ctx context.Context, incidentID int64, version int) (AnalysisRecord, error) {
	return s.scanAnalysis(s.db.QueryRow(ctx, `
		SELECT incident_id, version, status, inputs_digest, result, error, created_at, finished_at
		FROM analyses WHERE incident_id = $1 AND version = $2`, incidentID, version))
}
