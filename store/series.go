package store

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/waterline-dev/waterline/correlate"
)

// SeriesDef is one curve's identity (role, level, scope, stage; Points are
// ignored) and the source labels it came from, kept for display.
type SeriesDef struct {
	Curve  correlate.Curve
	Labels map[string]string
}

// EnsureSeries creates the series that do not exist yet and returns the id
// of every series by Curve.Key(). It commits on its own (outside any chunk
// transaction) so that ids are stable and parallel writers of other series
// never wait on each other; concurrent callers with the same keys are safe.
func (s *Store) EnsureSeries(ctx context.Context, defs []SeriesDef) (map[string]int64, error) {
	ids := make(map[string]int64, len(defs))
	if len(defs) == 0 {
		return ids, nil
	}
	// Sorted keys give every writer the same lock order: no deadlocks when
	// two pullers insert overlapping sets.
	sorted := append([]SeriesDef(nil), defs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Curve.Key() < sorted[j].Curve.Key() })
	n := len(sorted)
	var (
		keys, roles, levels, stages         = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		models, versions, tenants, replicas = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		nodes, labels                       = make([]string, 0, n), make([]string, 0, n)
		seen                                = map[string]bool{}
	)
	for _, d := range sorted {
		c := d.Curve
		k := c.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		lb := "null"
		if len(d.Labels) > 0 {
			b, err := json.Marshal(d.Labels)
			if err != nil {
				return nil, wrap("ensure series", err)
			}
			lb = string(b)
		}
		keys = append(keys, k)
		roles = append(roles, string(c.Role))
		levels = append(levels, string(c.Level))
		stages = append(stages, c.Stage)
		models = append(models, c.Scope.Model)
		versions = append(versions, c.Scope.Version)
		tenants = append(tenants, c.Scope.Tenant)
		replicas = append(replicas, c.Scope.Replica)
		nodes = append(nodes, c.Scope.Node)
		labels = append(labels, lb)
	}
	err := pgxBeginOwn(ctx, s.db, func(tx DB) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO series (key, role, level, stage, model, version, tenant, replica, node, labels)
			SELECT k, r, l, st, m, v, t, rp, n, lb::jsonb
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
			  AS u(k, r, l, st, m, v, t, rp, n, lb)
			ON CONFLICT (key) DO NOTHING`,
			keys, roles, levels, stages, models, versions, tenants, replicas, nodes, labels); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, key FROM series WHERE key = ANY($1)`, keys)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id int64
				k  string
			)
			if err := rows.Scan(&id, &k); err != nil {
				return err
			}
			ids[k] = id
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap("ensure series", err)
	}
	return ids, nil
}

// CurveSeries lists the series matching f, without points. With From and
// To set, only series with at least one point in [From, To) are listed.
// Step and MaxRoles are ignored.
func (s *Store) CurveSeries(ctx context.Context, f CurveFilter) ([]correlate.Curve, error) {
	where, args := f.seriesWhere()
	timeCond := ""
	if !f.From.IsZero() && !f.To.IsZero() {
		args = append(args, f.From, f.To)
		timeCond = ` AND EXISTS (SELECT 1 FROM points p WHERE p.series_id = s.id AND p.time >= $` +
			itoa(len(args)-1) + ` AND p.time < $` + itoa(len(args)) + `)`
	}
	rows, err := s.db.Query(ctx, `
		SELECT s.role, s.level, s.stage, s.model, s.version, s.tenant, s.replica, s.node
		FROM series s WHERE `+where+timeCond+`
		ORDER BY s.role, s.level, s.model, s.version, s.replica, s.node, s.stage`, args...)
	if err != nil {
		return nil, wrap("curve series", err)
	}
	defer rows.Close()
	var out []correlate.Curve
	for rows.Next() {
		var c correlate.Curve
		var role, level string
		if err := rows.Scan(&role, &level, &c.Stage, &c.Scope.Model, &c.Scope.Version, &c.Scope.Tenant,
			&c.Scope.Replica, &c.Scope.Node); err != nil {
			return nil, wrap("curve series", err)
		}
		c.Role, c.Level = correlate.Role(role), correlate.Level(level)
		out = append(out, c)
	}
	return out, wrap("curve series", rows.Err())
}
