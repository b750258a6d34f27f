package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// Incident statuses and sources.
const (
	IncidentOpen     = "open"
	IncidentResolved = "resolved"

	SourceManual       = "manual"
	SourceAlertmanager = "alertmanager"
	SourceDetector     = "detector"
)

// Incident is a window and a scope to explain.
type Incident struct {
	ID         int64
	Title      string
	Status     string // IncidentOpen or IncidentResolved
	Source     string // SourceManual, SourceAlertmanager or SourceDetector
	Start      time.Time
	End        *time.Time // nil while open-ended
	ResolvedAt *time.Time
	Scope      correlate.Scope
	GroupKey   string // Alertmanager groupKey of alert-opened incidents
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// TopCause is the first cause of the newest ready analysis, if any.
	TopCause *CauseSummary
	// Headline is that analysis' headline (the model hit hardest, the
	// incident in one line), if it has one.
	Headline *correlate.Headline
	// AnalysisStatus is the newest analysis' status, "" when there is
	// none, but "ready" when a newer version is pending or failed after a
	// ready one: TopCause is that one's, and GET …/analysis serves it as
	// ready (a resolved incident is not computed again, and its summary
	// read "failed" for good next to a top cause).
	AnalysisStatus string
}

// CauseSummary is the part of a cause a ticket shows.
type CauseSummary struct {
	Category string
	Score    float64
	Summary  string
}

// NewIncident is what CreateIncident needs.
type NewIncident struct {
	Title  string
	Source string // default SourceManual
	Start  time.Time
	End    *time.Time
	Scope  correlate.Scope
	// IdempotencyKey, when set, makes the creation once-only: a retry
	// with the same key answers the incident the first one created.
	// RequestHash tells a retry from another request reusing the key.
	IdempotencyKey string
	RequestHash    []byte
}

// KeyReusedError is a creation whose idempotency key already opened an
// incident for a different request.
type KeyReusedError struct{ IncidentID int64 }

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("idempotency key already used for incident %d with a different request", e.IncidentID)
}

// incidentSelect reads an incident with its newest analysis summary; the
// WHERE clause and ordering are appended by the caller.
const incidentSelect = `
	SELECT i.id, i.title, i.status, i.source, i.start_at, i.end_at, i.resolved_at,
	       i.model, i.version, i.tenant, i.replica, i.node, COALESCE(i.group_key, ''), i.created_at, i.updated_at,
	       CASE WHEN r.result IS NOT NULL THEN 'ready' ELSE COALESCE(a.status, '') END, r.result->'causes'->0->>'category', (r.result->'causes'->0->>'score')::float8,
	       r.result->'causes'->0->>'summary',
	       r.result->'headline'->>'model', r.result->'headline'->>'title', r.result->'headline'->>'summary'
	FROM incidents i
	LEFT JOIN LATERAL (SELECT status FROM analyses WHERE incident_id = i.id ORDER BY version DESC LIMIT 1) a ON true
	LEFT JOIN LATERAL (SELECT result ` + newestReadyAnalysis + `) r ON true`

// newestReadyAnalysis is the FROM of a LATERAL subquery that reads the
// newest ready analysis of incident i.
const newestReadyAnalysis = `FROM analyses WHERE incident_id = i.id AND status = 'ready' ORDER BY version DESC LIMIT 1`

func scanIncident(row interface{ Scan(...any) error }) (Incident, error) {
	var (
		in           Incident
		cat, summary *string
		score        *float64
		hModel       *string
		hTitle       *string
		hSummary     *string
	)
	err := row.Scan(&in.ID, &in.Title, &in.Status, &in.Source, &in.Start, &in.End, &in.ResolvedAt,
		&in.Scope.Model, &in.Scope.Version, &in.Scope.Tenant, &in.Scope.Replica, &in.Scope.Node, &in.GroupKey, &in.CreatedAt, &in.UpdatedAt,
		&in.AnalysisStatus, &cat, &score, &summary, &hModel, &hTitle, &hSummary)
	if err != nil {
		return Incident{}, err
	}
	in.Start = in.Start.UTC()
	in.End = utcPtr(in.End)
	in.ResolvedAt = utcPtr(in.ResolvedAt)
	if cat != nil {
		in.TopCause = &CauseSummary{Category: *cat}
		if score != nil {
			in.TopCause.Score = *score
		}
		if summary != nil {
			in.TopCause.Summary = *summary
		}
	}
	if hTitle != nil && *hTitle != "" {
		in.Headline = &correlate.Headline{Title: *hTitle}
		if hModel != nil {
			in.Headline.Model = *hModel
		}
		if hSummary != nil {
			in.Headline.Summary = *hSummary
		}
	}
	return in, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CreateIncident stores a new open incident and returns it.
func (s *Store) CreateIncident(ctx context.Context, n NewIncident) (Incident, error) {
	in, _, err := s.CreateIncidentOnce(ctx, n)
	return in, err
}

// CreateIncidentOnce creates an incident, or, when n's idempotency key
// already created one for the same request, returns that one with
// created false. The key's uniqueness is the database's, so concurrent
// retries create one incident. A key reused for another request is a
// *KeyReusedError.
func (s *Store) CreateIncidentOnce(ctx context.Context, n NewIncident) (in Incident, created bool, err error) {
	if n.Source == "" {
		n.Source = SourceManual
	}
	var key *string
	if n.IdempotencyKey != "" {
		key = &n.IdempotencyKey
	}
	var id int64
	err = s.db.QueryRow(ctx, `
		INSERT INTO incidents (title, source, start_at, end_at, model, version, tenant, replica, node, idempotency_key, request_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING id`,
		n.Title, n.Source, n.Start, n.End, n.Scope.Model, n.Scope.Version, n.Scope.Tenant, n.Scope.Replica, n.Scope.Node,
		key, n.RequestHash).Scan(&id)
	created = err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		var hash []byte
		if err = s.db.QueryRow(ctx, `SELECT id, request_hash FROM incidents WHERE idempotency_key = $1`, key).Scan(&id, &hash); err == nil &&
			!bytes.Equal(hash, n.RequestHash) {
			return Incident{}, false, &KeyReusedError{IncidentID: id}
		}
	}
	if err != nil {
		return Incident{}, false, wrap("create incident", err)
	}
	in, err = s.Incident(ctx, id)
	return in, created, err
}

// Incident returns one incident, or ErrNotFound.
func (s *Store) Incident(ctx context.Context, id int64) (Incident, error) {
	in, err := scanIncident(s.db.QueryRow(ctx, incidentSelect+` WHERE i.id = $1`, id))
	if err != nil {
		return Incident{}, wrap("incident", err)
	}
	return in, nil
}

// IncidentFilter selects incidents for ListIncidents.
type IncidentFilter struct {
	Status   string    // "" = any
	Source   string    // "" = any
	Model    string    // "" = any; else incidents scoped to this model
	From, To time.Time // zero = unbounded; an incident matches if its window overlaps [From, To)
	Cursor   string    // from a previous page's next cursor; "" = first page
	Limit    int       // 1..500; 0 = 50
}

// ErrBadCursor means a pagination cursor was not made by ListIncidents.
var ErrBadCursor = errors.New("bad cursor")

// ListIncidents returns one page of incidents, newest first (by id: the
// order they were opened in), and the cursor of the next page ("" on the
// last page). The order is stable under inserts and updates: a cursor is
// the last row's id. (By start, an Alertmanager notification moving an
// open incident's start earlier listed it again on a later page.)
func (s *Store) ListIncidents(ctx context.Context, f IncidentFilter) ([]Incident, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 500)
	var afterID *int64
	if f.Cursor != "" {
		id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		afterID = &id
	}
	var from, to *time.Time
	if !f.From.IsZero() {
		from = &f.From
	}
	if !f.To.IsZero() {
		to = &f.To
	}
	rows, err := s.db.Query(ctx, incidentSelect+`
		WHERE ($1 = '' OR i.status = $1)
		  AND ($2::timestamptz IS NULL OR i.end_at IS NULL OR i.end_at > $2)
		  AND ($3::timestamptz IS NULL OR i.start_at < $3)
		  AND ($4::bigint IS NULL OR i.id < $4)
		  AND ($6 = '' OR i.source = $6)
		  AND ($7 = '' OR i.model = $7)
		ORDER BY i.id DESC
		LIMIT $5`, f.Status, from, to, afterID, limit+1, f.Source, f.Model)
	if err != nil {
		return nil, "", wrap("list incidents", err)
	}
	defer rows.Close()
	var out []Incident
	for rows.Next() {
		in, err := scanIncident(rows)
		if err != nil {
			return nil, "", wrap("list incidents", err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, "", wrap("list incidents", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodeCursor(last.ID)
	}
	return out, next, nil
}

// ResolveIncident marks an incident resolved at at; an open-ended window
// ends then too. Resolving a resolved incident changes nothing. It returns
// the incident as stored, or ErrNotFound.
func (s *Store) ResolveIncident(ctx context.Context, id int64, at time.Time) (Incident, error) {
	in, _, err := s.ResolveIncidentOnce(ctx, id, at)
	return in, err
}

// ResolveIncidentOnce is ResolveIncident, and says whether this call
// resolved it: of two resolving at once, one.
func (s *Store) ResolveIncidentOnce(ctx context.Context, id int64, at time.Time) (Incident, bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE incidents SET status = 'resolved', resolved_at = $2,
		       end_at = COALESCE(end_at, GREATEST($2::timestamptz, start_at + interval '1 second')), updated_at = now()
		WHERE id = $1 AND status = 'open'`, id, at)
	if err != nil {
		return Incident{}, false, wrap("resolve incident", err)
	}
	in, err := s.Incident(ctx, id)
	return in, tag.RowsAffected() == 1, err
}

// encodeCursor makes an opaque page cursor from a row's id.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

// maxCursorMicros bounds an earlier cursor's start: the end of 9999.
var maxCursorMicros = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// decodeCursor reads a cursor; one of the earlier form ("start.id", when
// pages went by start) goes on from its id.
func decodeCursor(c string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	s := string(raw)
	if before, after, ok := strings.Cut(s, "."); ok {
		us, err := strconv.ParseInt(before, 10, 64)
		if err != nil || us < 0 || us > maxCursorMicros {
			return 0, fmt.Errorf("%w: %q", ErrBadCursor, c)
		}
		s = after
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return id, nil
}

// RecentlyResolved returns the incidents resolved last, newest
// resolution first: one that ran for days and was resolved a minute ago
// comes before ten that started later and were resolved yesterday.
func (s *Store) RecentlyResolved(ctx context.Context, limit int) ([]Incident, error) {
	rows, err := s.db.Query(ctx, incidentSelect+`
		WHERE i.status = 'resolved'
		ORDER BY i.resolved_at DESC NULLS LAST, i.id DESC
		LIMIT $1`, max(limit, 1))
	if err != nil {
		return nil, wrap("recently resolved", err)
	}
	defer rows.Close()
	var out []Incident
	for rows.Next() {
		in, err := scanIncident(rows)
		if err != nil {
			return nil, wrap("recently resolved", err)
		}
		out = append(out, in)
	}
	return out, wrap("recently resolved", rows.Err())
}

// CountIncidents counts the incidents with a status ("" = any).
func (s *Store) CountIncidents(ctx context.Context, status string) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM incidents WHERE $1 = '' OR status = $1`, status).Scan(&n)
	return n, wrap("count incidents", err)
}
