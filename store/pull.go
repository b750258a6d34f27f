package store

import (
	"context"
	"errors"
	"time"
)

// PullSource is the progress of one pull source (a configured query, or the
// kube-state-metrics events): data before Cursor is committed.
type PullSource struct {
	Source      string
	Cursor      time.Time
	LastSuccess *time.Time
	LastAttempt *time.Time
	LastError   string
	ErrorsTotal int64
	PointsTotal int64
}

// Gap reasons.
const (
	GapOutage  = "outage"  // the live loop could not pull this range yet
	GapHistory = "history" // a "waterline pull --from --to" job
)

// PullGap is a range still to pull (or, with FilledAt set, one that was
// filled). Done is the progress: data of [From, Done) is committed.
type PullGap struct {
	ID       int64
	Source   string
	Reason   string
	From     time.Time
	To       time.Time
	Done     time.Time
	Error    string
	OpenedAt time.Time
	FilledAt *time.Time
}

// PullCursor returns the cursor of source; ok is false when the source has
// never been pulled.
func (s *Store) PullCursor(ctx context.Context, source string) (cursor time.Time, ok bool, err error) {
	err = s.db.QueryRow(ctx, `SELECT cursor_at FROM pull_cursors WHERE source = $1`, source).Scan(&cursor)
	err = translate(err)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, wrap("pull cursor", err)
	}
	return cursor.UTC(), true, nil
}

// AdvancePullCursor records a successful pull of source up to cursor (never
// moving it back) and closes the source's outage gaps that end at or
// before it. Call it in the transaction that commits the points, so the
// cursor never runs ahead of the data.
func (s *Store) AdvancePullCursor(ctx context.Context, source string, cursor, now time.Time, points int64) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO pull_cursors AS c (source, cursor_at, last_success, last_attempt, points_total)
		VALUES ($1, $2, $3, $3, $4)
		ON CONFLICT (source) DO UPDATE SET
			cursor_at = GREATEST(c.cursor_at, EXCLUDED.cursor_at),
			last_success = EXCLUDED.last_success, last_attempt = EXCLUDED.last_attempt,
			last_error = '', points_total = c.points_total + EXCLUDED.points_total`,
		source, cursor, now, points)
	if err != nil {
		return wrap("advance pull cursor", err)
	}
	_, err = s.db.Exec(ctx, `
		UPDATE pull_gaps SET done_to = LEAST(to_at, GREATEST(done_to, $2)),
			filled_at = CASE WHEN to_at <= $2 THEN $3::timestamptz END
		WHERE source = $1 AND reason = 'outage' AND filled_at IS NULL AND from_at < $2`,
		source, cursor, now)
	return wrap("advance pull cursor", err)
}

// NotePullChecked records a successful attempt to pull source that found
// nothing new to pull (its metric had no sample past the cursor): like an
// empty chunk's AdvancePullCursor, it clears the source's last error.
func (s *Store) NotePullChecked(ctx context.Context, source string, now time.Time) error {
	_, err := s.db.Exec(ctx, `
		UPDATE pull_cursors SET last_success = $2, last_attempt = $2, last_error = ''
		WHERE source = $1`, source, now)
	return wrap("note pull checked", err)
}

// RecordPullError notes a failed attempt to pull source over [from, to):
// the error counts and, for the live loop (outage true), the range joins
// the source's open outage gap (extending it, or opening one).
func (s *Store) RecordPullError(ctx context.Context, source string, from, to, now time.Time, msg string, outage bool) error {
	return s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `
			INSERT INTO pull_cursors AS c (source, cursor_at, last_attempt, last_error, errors_total)
			VALUES ($1, $2, $3, $4, 1)
			ON CONFLICT (source) DO UPDATE SET last_attempt = EXCLUDED.last_attempt,
				last_error = EXCLUDED.last_error, errors_total = c.errors_total + 1`,
			source, from, now, msg); err != nil {
			return err
		}
		if !outage || !to.After(from) {
			return nil
		}
		tag, err := tx.db.Exec(ctx, `
			UPDATE pull_gaps SET to_at = GREATEST(to_at, $3), from_at = LEAST(from_at, $2), error = $4
			WHERE source = $1 AND reason = 'outage' AND filled_at IS NULL`, source, from, to, msg)
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		_, err = tx.db.Exec(ctx, `
			INSERT INTO pull_gaps (source, reason, from_at, to_at, done_to, error, opened_at)
			VALUES ($1, 'outage', $2, $3, $2, $4, $5)`, source, from, to, msg, now)
		return err
	})
}

// HistoryGaps returns, per source, the newest history job over exactly
// [from, to): filled or not. A rerun of an interrupted "waterline pull"
// resumes these instead of starting over.
func (s *Store) HistoryGaps(ctx context.Context, from, to time.Time) (map[string]PullGap, error) {
	rows, err := s.db.Query(ctx, `
		SELECT DISTINCT ON (source) id, source, reason, from_at, to_at, done_to, error, opened_at, filled_at FROM pull_gaps
		WHERE reason = 'history' AND from_at = $1 AND to_at = $2
		ORDER BY source, id DESC`, from, to)
	if err != nil {
		return nil, wrap("history gaps", err)
	}
	defer rows.Close()
	out := map[string]PullGap{}
	for rows.Next() {
		g, err := s.scanGap(rows)
		if err != nil {
			return nil, err
		}
		out[g.Source] = g
	}
	return out, wrap("history gaps", rows.Err())
}

// OpenHistoryGap opens a new history job of source over [from, to).
func (s *Store) OpenHistoryGap(ctx context.Context, source string, from, to, now time.Time) (PullGap, error) {
	return s.scanGap(s.db.QueryRow(ctx, `
		INSERT INTO pull_gaps (source, reason, from_at, to_at, done_to, opened_at)
		VALUES ($1, 'history', $2, $3, $2, $4)
		RETURNING id, source, reason, from_at, to_at, done_to, error, opened_at, filled_at`, source, from, to, now))
}

// AdvanceGap records that the gap's data before done is committed, and
// fills it when done reaches its end. Call it in the transaction that
// commits the points.
func (s *Store) AdvanceGap(ctx context.Context, id int64, done, now time.Time) error {
	_, err := s.db.Exec(ctx, `
		UPDATE pull_gaps SET done_to = LEAST(to_at, GREATEST(done_to, $2)),
			filled_at = CASE WHEN to_at <= $2 THEN $3::timestamptz END, error = ''
		WHERE id = $1`, id, done, now)
	return wrap("advance gap", err)
}

// NoteGapError records the last error of a gap that could not be filled.
func (s *Store) NoteGapError(ctx context.Context, id int64, msg string) error {
	_, err := s.db.Exec(ctx, `UPDATE pull_gaps SET error = $2 WHERE id = $1`, id, msg)
	return wrap("note gap error", err)
}

// RetirePullSources records which sources the live pull's config holds:
// the others are retired (PullSources and PullGaps leave them out; their
// cursors stay, so a source put back resumes), and those among live that
// were retired are back. A config that drops sources (presets detected
// once Prometheus answers) otherwise left them in the pull health for
// ever, failing and ever further behind, though nothing pulled them.
func (s *Store) RetirePullSources(ctx context.Context, live []string, now time.Time) error {
	if live == nil {
		live = []string{}
	}
	_, err := s.db.Exec(ctx, `
		UPDATE pull_cursors SET retired_at = CASE WHEN source = ANY($1) THEN NULL ELSE $2::timestamptz END
		WHERE (source = ANY($1)) = (retired_at IS NOT NULL)`, live, now)
	return wrap("retire pull sources", err)
}

// PullSources lists the progress of every source the live pull holds
// (not retired: see RetirePullSources), by name.
func (s *Store) PullSources(ctx context.Context) ([]PullSource, error) {
	rows, err := s.db.Query(ctx, `
		SELECT source, cursor_at, last_success, last_attempt, last_error, errors_total, points_total
		FROM pull_cursors WHERE retired_at IS NULL ORDER BY source`)
	if err != nil {
		return nil, wrap("pull sources", err)
	}
	defer rows.Close()
	var out []PullSource
	for rows.Next() {
		var p PullSource
		if err := rows.Scan(&p.Source, &p.Cursor, &p.LastSuccess, &p.LastAttempt, &p.LastError, &p.ErrorsTotal, &p.PointsTotal); err != nil {
			return nil, wrap("pull sources", err)
		}
		p.Cursor = p.Cursor.UTC()
		out = append(out, p)
	}
	return out, wrap("pull sources", rows.Err())
}

// PullGaps lists gaps, oldest first: the open ones, plus those filled at or
// after filledSince (zero: none of the filled ones). Outage gaps of a
// retired source are left out: nothing is pulling it to fill them.
func (s *Store) PullGaps(ctx context.Context, filledSince time.Time) ([]PullGap, error) {
	var since *time.Time
	if !filledSince.IsZero() {
		since = &filledSince
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, source, reason, from_at, to_at, done_to, error, opened_at, filled_at FROM pull_gaps g
		WHERE (filled_at IS NULL OR filled_at >= $1) AND NOT (reason = 'outage' AND EXISTS (
			SELECT 1 FROM pull_cursors c WHERE c.source = g.source AND c.retired_at IS NOT NULL))
		ORDER BY id`, since)
	if err != nil {
		return nil, wrap("pull gaps", err)
	}
	defer rows.Close()
	var out []PullGap
	for rows.Next() {
		g, err := s.scanGap(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, wrap("pull gaps", rows.Err())
}

// PruneFilledGaps deletes gaps filled before cutoff.
func (s *Store) PruneFilledGaps(ctx context.Context, cutoff time.Time) error {
	_, err := s.db.Exec(ctx, `DELETE FROM pull_gaps WHERE filled_at < $1`, cutoff)
	return wrap("prune gaps", err)
}

func (s *Store) scanGap(row interface{ Scan(...any) error }) (PullGap, error) {
	var g PullGap
	if err := row.Scan(&g.ID, &g.Source, &g.Reason, &g.From, &g.To, &g.Done, &g.Error, &g.OpenedAt, &g.FilledAt); err != nil {
		return PullGap{}, wrap("pull gap", err)
	}
	g.From, g.To, g.Done, g.OpenedAt = g.From.UTC(), g.To.UTC(), g.Done.UTC(), g.OpenedAt.UTC()
	return g, nil
}
