package store

import (
	"context"
	"encoding/json"
	"time"
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

// FinishAnalysis stores the result (or the failure) of a version.
func (s *Store) FinishAnalysis(ctx context.Context, incidentID int64, version int, result []byte, failure string) error {
	status := AnalysisReady
	if failure != "" {
		status = AnalysisFailed
	}
	_, err := s.db.Exec(ctx, `UPDATE analyses SET status = $3, result = $4, error = $5, finished_at = now()
		WHERE incident_id = $1 AND version = $2`, incidentID, version, status, result, failure)
	return wrap("finish analysis", err)
}
