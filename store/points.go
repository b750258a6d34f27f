package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// SeriesPoints are points of one series (an id from EnsureSeries).
type SeriesPoints struct {
	SeriesID int64
	Points   []correlate.Point
}

// UpsertPoints writes points so that each (series, time) holds exactly one
// value, the newest written: re-pulling an overlapping range overwrites
// instead of duplicating. Rows are COPYed into a temporary table and merged
// with one INSERT … ON CONFLICT, which is an order of magnitude faster than
// row-by-row upserts; into a range still empty for these series they are
// COPYed directly. Each batch's points must be sorted by time. The day partitions must exist (EnsurePartitions,
// outside the caller's transaction); a batch must not repeat a
// (series, time). Run it inside InTx to commit the points together with
// the caller's progress.
//
// The series must exist: maintenance deletes series whose points
// retention has dropped, so an id a writer has cached may be gone. The
// series are locked against that deletion until the points are committed,
// and ErrSeriesGone says one was deleted before (ask EnsureSeries again).
func (s *Store) UpsertPoints(ctx context.Context, batch []SeriesPoints) (n int64, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		if err := tx.claimSeries(ctx, batch); err != nil {
			return err
		}
		n, err = tx.upsertPoints(ctx, batch)
		return err
	})
	return n, err
}

// ErrSeriesGone means points were written for a series id that no longer
// exists (maintenance deleted the series after its last point expired).
var ErrSeriesGone = errors.New("store: series deleted by retention; look its id up again")

// claimSeries moves each of the batch's series' last_point forward to the
// day of its newest point (once a day: a live round rewrites no series
// row) and fails with ErrSeriesGone when one no longer exists. The
// update locks the row until the points commit, and that is the only
// lock needed: PruneSeries deletes only series whose last_point is before
// the retention cutoff and that hold no point, and a write of points
// newer than that moves last_point forward (PruneSeries then skips the
// locked row, or re-checks the updated one and keeps it). A series whose
// last_point is already at or past the batch's day holds points the
// cutoff keeps, or the batch's points are past retention themselves.
func (s *Store) claimSeries(ctx context.Context, batch []SeriesPoints) error {
	days := map[int64]time.Time{}
	for _, b := range batch {
		if len(b.Points) == 0 {
			continue
		}
		day := time.UnixMilli(b.Points[len(b.Points)-1].T).UTC().Truncate(24 * time.Hour)
		if d, ok := days[b.SeriesID]; !ok || day.After(d) {
			days[b.SeriesID] = day
		}
	}
	if len(days) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(days))
	last := make([]time.Time, len(ids))
	for i, id := range ids {
		last[i] = days[id]
	}
	// Rows locked in id order: no deadlock between writers.
	if _, err := s.db.Exec(ctx, `
		UPDATE series s SET last_point = u.day FROM (
			SELECT s.id, u.day FROM series s JOIN unnest($1::bigint[], $2::timestamptz[]) AS u(id, day) ON s.id = u.id
			WHERE s.last_point < u.day ORDER BY s.id FOR NO KEY UPDATE OF s) u
		WHERE s.id = u.id`, ids, last); err != nil {
		return wrap("upsert points", err)
	}
	// A statement of its own, so a prune the update waited for is seen.
	var found int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM series WHERE id = ANY($1)`, ids).Scan(&found); err != nil {
		return wrap("upsert points", err)
	}
	if found < len(ids) {
		return fmt.Errorf("%w (%d of %d)", ErrSeriesGone, len(ids)-found, len(ids))
	}
	return nil
}

func (s *Store) upsertPoints(ctx context.Context, batch []SeriesPoints) (int64, error) {
	total := 0
	for _, b := range batch {
		total += len(b.Points)
	}
	if total == 0 {
		return 0, nil
	}
	var (
		n        int64
		ids      = make([]int64, 0, len(batch))
		min, max int64
	)
	for _, b := range batch {
		if len(b.Points) == 0 {
			continue
		}
		ids = append(ids, b.SeriesID)
		if first := b.Points[0].T; min == 0 || first < min {
			min = first
		}
		if last := b.Points[len(b.Points)-1].T; last > max {
			max = last
		}
	}
	// Fast path: a range none of these series has points in yet (the first
	// pull of history, the live loop's new minutes) is COPYed straight into
	// points, half the work of staging and merging. A concurrent writer
	// that got there first makes the COPY fail on the key; the savepoint
	// then falls back to the merge.
	var exists bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM points WHERE series_id = ANY($1) AND time >= $2 AND time <= $3)`,
		ids, time.UnixMilli(min), time.UnixMilli(max)).Scan(&exists); err != nil {
		return 0, wrap("upsert points", err)
	}
	if !exists {
		err := pgxBeginOwn(ctx, s.db, func(tx DB) error {
			var err error
			n, err = tx.CopyFrom(ctx, pgx.Identifier{"points"}, []string{"series_id", "time", "value"}, &pointsSource{batch: batch, j: -1})
			return err
		})
		if err == nil {
			return n, nil
		}
		if !IsUniqueViolation(err) {
			s.noPartitionSeen(TablePoints, err)
			return 0, wrap("upsert points", err)
		}
	}
	err := pgxBeginOwn(ctx, s.db, func(tx DB) error {
		// ON COMMIT DROP keeps pooled sessions clean; the table lives only
		// in this (sub)transaction's top-level transaction, so a second call
		// in the same transaction reuses it after a TRUNCATE.
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS wl_points_in
			(series_id bigint, time timestamptz, value double precision) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE wl_points_in`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"wl_points_in"}, []string{"series_id", "time", "value"},
			&pointsSource{batch: batch, j: -1}); err != nil {
			return err
		}
		// The WHERE skips rewriting identical rows, so a re-pull of an
		// unchanged range creates no dead tuples.
		tag, err := tx.Exec(ctx, `
			INSERT INTO points (series_id, time, value)
			SELECT series_id, time, value FROM wl_points_in
			ON CONFLICT (series_id, time) DO UPDATE SET value = EXCLUDED.value
			WHERE points.value IS DISTINCT FROM EXCLUDED.value`)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		s.noPartitionSeen(TablePoints, err)
		return 0, wrap("upsert points", err)
	}
	return n, nil
}

// pointsSource streams a batch to COPY without materialising rows.
type pointsSource struct {
	batch []SeriesPoints
	i, j  int
	row   [3]any
}

func (p *pointsSource) Next() bool {
	for p.i < len(p.batch) {
		p.j++
		if p.j < len(p.batch[p.i].Points) {
			return true
		}
		p.i, p.j = p.i+1, -1
	}
	return false
}

func (p *pointsSource) Values() ([]any, error) {
	pt := p.batch[p.i].Points[p.j]
	p.row[0], p.row[1], p.row[2] = p.batch[p.i].SeriesID, time.UnixMilli(pt.T).UTC(), pt.V
	return p.row[:], nil
}

func (p *pointsSource) Err() error { return nil }

// CurveFilter selects curves. Empty Roles and Levels mean all; Scope fields
// that are set must match exactly (Scope{Model: "m"} selects the model
// curve of m and its version and replica curves, not node curves); Stage
// likewise. Points are those in [From, To).
type CurveFilter struct {
	From, To time.Time
	Roles    []correlate.Role
	Levels   []correlate.Level
	Scope    correlate.Scope
	Stage    string
	Nodes    []string // when set, the curve's node must be one of these
	// Step > 0 downsamples: one point per Step-wide bucket (aligned to the
	// Unix epoch), at the bucket's start, holding the mean of its points —
	// or the maximum for the roles in MaxRoles, so that latency spikes
	// survive downsampling.
	Step     time.Duration
	MaxRoles []correlate.Role
}

// PeakRoles are the roles whose downsampled buckets keep their maximum
// (CurveFilter.MaxRoles): a latency spike shorter than a bucket still
// shows at its height.
var PeakRoles = []correlate.Role{
	correlate.RoleLatencyP50, correlate.RoleLatencyP95, correlate.RoleLatencyP99, correlate.RoleLatencyMean,
	correlate.RoleErrorRate, correlate.RoleQueue,
}

// seriesWhere renders the series conditions of f with its arguments.
func (f CurveFilter) seriesWhere() (string, []any) {
	roles := make([]string, len(f.Roles))
	for i, r := range f.Roles {
		roles[i] = string(r)
	}
	levels := make([]string, len(f.Levels))
	for i, l := range f.Levels {
		levels[i] = string(l)
	}
	nodes := f.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	return `(cardinality($1::text[]) = 0 OR s.role = ANY($1))
		AND (cardinality($2::text[]) = 0 OR s.level = ANY($2))
		AND ($3 = '' OR s.model = $3) AND ($4 = '' OR s.version = $4) AND ($5 = '' OR s.tenant = $5)
		AND ($6 = '' OR s.replica = $6) AND ($7 = '' OR s.node = $7) AND ($8 = '' OR s.stage = $8)
		AND (cardinality($9::text[]) = 0 OR s.node = ANY($9))`,
		[]any{roles, levels, f.Scope.Model, f.Scope.Version, f.Scope.Tenant, f.Scope.Replica, f.Scope.Node, f.Stage, nodes}
}

// Curves returns the curves matching f with their points in [From, To),
// sorted by role, level, scope and stage; curves without points in the
// window are left out. It is one query: each series' points come back as
// two arrays (times, values) aggregated in Postgres, so ~1,000 curves of
// ~500 points cost one round trip and no per-row decoding of the series
// columns.
func (s *Store) Curves(ctx context.Context, f CurveFilter) ([]correlate.Curve, error) {
	where, args := f.seriesWhere()
	args = append(args, f.From, f.To)
	from, to := itoa(len(args)-1), itoa(len(args))
	var inner string
	if f.Step > 0 {
		maxRoles := make([]string, len(f.MaxRoles))
		for i, r := range f.MaxRoles {
			maxRoles[i] = string(r)
		}
		args = append(args, f.Step.Seconds(), maxRoles)
		step, mr := itoa(len(args)-1), itoa(len(args))
		inner = `SELECT array_agg((extract(epoch FROM b) * 1000)::bigint ORDER BY b) AS ts, array_agg(v ORDER BY b) AS vs
			FROM (SELECT date_bin($` + step + `::float8 * interval '1 second', p.time, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS b,
			        CASE WHEN s.role = ANY($` + mr + `::text[]) THEN max(p.value) ELSE avg(p.value) END AS v
			      FROM points p WHERE p.series_id = s.id AND p.time >= $` + from + ` AND p.time < $` + to + `
			      GROUP BY 1) x`
	} else {
		inner = `SELECT array_agg((extract(epoch FROM p.time) * 1000)::bigint ORDER BY p.time) AS ts,
			        array_agg(p.value ORDER BY p.time) AS vs
			FROM points p WHERE p.series_id = s.id AND p.time >= $` + from + ` AND p.time < $` + to
	}
	rows, err := s.db.Query(ctx, `
		SELECT s.role, s.level, s.stage, s.model, s.version, s.tenant, s.replica, s.node, pts.ts, pts.vs
		FROM series s CROSS JOIN LATERAL (`+inner+`) pts
		WHERE `+where+` AND pts.ts IS NOT NULL
		ORDER BY s.role, s.level, s.model, s.version, s.replica, s.node, s.stage`, args...)
	if err != nil {
		return nil, wrap("curves", err)
	}
	defer rows.Close()
	var (
		out   []correlate.Curve
		ts    []int64
		vs    []float64
		role  string
		level string
	)
	for rows.Next() {
		var c correlate.Curve
		if err := rows.Scan(&role, &level, &c.Stage, &c.Scope.Model, &c.Scope.Version, &c.Scope.Tenant,
			&c.Scope.Replica, &c.Scope.Node, &ts, &vs); err != nil {
			return nil, wrap("curves", err)
		}
		c.Role, c.Level = correlate.Role(role), correlate.Level(level)
		c.Points = make([]correlate.Point, len(ts))
		for i := range ts {
			c.Points[i] = correlate.Point{T: ts[i], V: vs[i]}
		}
		out = append(out, c)
	}
	return out, wrap("curves", rows.Err())
}

func itoa(i int) string { return strconv.Itoa(i) }
