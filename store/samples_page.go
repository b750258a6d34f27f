package store

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// SampleQuery selects one page of samples for the sample table: a window,
// exact matches on the dimensions that are set, slow or not slow against a
// per-model threshold, an order and a page.
type SampleQuery struct {
	From, To time.Time // half-open [From, To)
	Scope    correlate.Scope
	Entry    string
	Status   string
	// BatchMin..BatchMax bounds batch_size when BatchMax > 0 (a
	// concentration row's bucket such as "5-8").
	BatchMin, BatchMax int
	// Slow picks the slow samples (total_ms at or over the model's
	// threshold), NotSlow the others; neither picks all.
	Slow, NotSlow bool
	SlowMs        map[string]float64 // per model
	DefaultSlowMs float64            // for models not in SlowMs
	// Sort is "time", "total" or a stage name; Desc reverses it.
	Sort string
	Desc bool
	// Spread picks the slowest request of each (time bucket, replica)
	// first, the second slowest of each next, and so on, each page sorted
	// by total descending: the slowest requests alone often come from one
	// burst on one replica. The window is cut into SpreadBuckets buckets.
	// It replaces Sort and Desc.
	Spread bool
	Offset int
	Limit  int // 1..500; 0 = 25
}

// SpreadBuckets is how many time buckets a Spread query cuts its window into.
const SpreadBuckets = 20

// spreadStride is the width of a Spread query's time buckets: whole
// microseconds (what Postgres' date_bin works in), at least one.
func spreadStride(from, to time.Time) time.Duration {
	return max(to.Sub(from)/SpreadBuckets, time.Microsecond).Truncate(time.Microsecond)
}

// spreadBucket is the time bucket of t in a Spread query over [from, to):
// date_bin(stride, t, from) in SQL, the same integer arithmetic here.
func spreadBucket(t, from, to time.Time) int64 {
	return (t.UnixMicro() - from.UnixMicro()) / spreadStride(from, to).Microseconds()
}

// SamplePage is one page of a SampleQuery and how many samples match.
type SamplePage struct {
	Samples []correlate.Sample
	Total   int
}

// sampleSortColumn maps a SampleQuery.Sort onto a column; unknown sorts
// order by total.
func sampleSortColumn(sort string) string {
	switch sort {
	case "time":
		return "time"
	case "", "total":
		return "total_ms"
	}
	if _, ok := correlate.ParseStage(sort); ok {
		return sort + "_ms"
	}
	return "total_ms"
}

func (q SampleQuery) limit() int {
	if q.Limit <= 0 {
		return 25
	}
	return min(q.Limit, 500)
}

// SamplesPage returns one page of q. The threshold of each model comes in
// as two arrays joined in SQL, so one statement serves every model mix.
func (s *Store) SamplesPage(ctx context.Context, q SampleQuery) (SamplePage, error) {
	models, ms := make([]string, 0, len(q.SlowMs)), make([]float64, 0, len(q.SlowMs))
	for m, v := range q.SlowMs {
		models, ms = append(models, m), append(ms, v)
	}
	slow := 0
	switch {
	case q.Slow:
		slow = 1
	case q.NotSlow:
		slow = -1
	}
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	// The thresholds join as a tiny VALUES-like table (one row per model)
	// rather than a subquery evaluated per sample.
	from := `samples LEFT JOIN unnest($13::text[], $14::float8[]) AS thr(m, ms) ON thr.m = samples.model`
	where := `time >= $1 AND time < $2
		  AND ($3 = '' OR model = $3) AND ($4 = '' OR version = $4) AND ($5 = '' OR tenant = $5)
		  AND ($6 = '' OR replica = $6) AND ($7 = '' OR node = $7) AND ($8 = '' OR entry = $8) AND ($9 = '' OR status = $9)
		  AND ($10 = 0 OR batch_size BETWEEN $11 AND $10)
		  AND ($12 = 0 OR (($12 = 1) = (total_ms >= COALESCE(thr.ms, $15::float8))))`
	args := []any{q.From, q.To, q.Scope.Model, q.Scope.Version, q.Scope.Tenant, q.Scope.Replica, q.Scope.Node,
		q.Entry, q.Status, q.BatchMax, q.BatchMin, slow, models, ms, q.DefaultSlowMs}
	count := func() (n int, err error) {
		err = s.db.QueryRow(ctx, `SELECT count(*) FROM `+from+` WHERE `+where, args...).Scan(&n)
		return n, wrap("samples page", err)
	}
	if q.Spread {
		return s.spreadPage(ctx, q, from, where, args, count)
	}
	var page SamplePage
	var err error
	if page.Total, err = count(); err != nil {
		return SamplePage{}, err
	}
	if page.Total == 0 {
		return page, nil
	}
	formats := make(pgx.QueryResultFormats, len(sampleColumns))
	for i := range formats {
		formats[i] = pgx.BinaryFormatCode
	}
	col := sampleSortColumn(q.Sort)
	sql := `
		SELECT time, request_id, model, version, tenant, replica, node, entry, batch_size, status, total_ms,
		       gateway_ms, auth_ms, route_ms, queue_ms, batch_wait_ms, exec_ms, postprocess_ms, downstream_ms, sample_rate,
		       dependency, input_tokens, output_tokens
		FROM ` + from + ` WHERE ` + where + `
		ORDER BY ` + col + ` ` + dir + ` NULLS LAST, time, request_id
		LIMIT ` + itoa(q.limit()) + ` OFFSET ` + itoa(max(q.Offset, 0))
	rows, err := s.db.Query(ctx, sql, append([]any{formats}, args...)...)
	if err != nil {
		return SamplePage{}, wrap("samples page", err)
	}
	defer rows.Close()
	intern := interner{}
	for rows.Next() {
		var x correlate.Sample
		if err := decodeSampleRow(rows.RawValues(), &x, intern); err != nil {
			return SamplePage{}, wrap("samples page", err)
		}
		page.Samples = append(page.Samples, x)
	}
	return page, wrap("samples page", rows.Err())
}

// spreadPage is SamplesPage for a Spread query. It ranks on the narrow key
// columns only (the sort of every matching row stays small), takes the
// page's keys, then fetches their rows by primary key within the window's
// partitions; the count comes from the same scan (one pass over the window,
// where the other orders make two). Byte-order ("C") comparisons: faster
// than the locale's, and the order spreadPageOf uses on snapshots.
func (s *Store) spreadPage(ctx context.Context, q SampleQuery, from, where string, args []any, count func() (int, error)) (SamplePage, error) {
	sql := `
		WITH r AS MATERIALIZED (
			SELECT time AS t, request_id AS rid, total_ms AS tot,
			       row_number() OVER (PARTITION BY date_bin($16::interval, time, $1), replica COLLATE "C"
			                          ORDER BY total_ms DESC, time, request_id COLLATE "C") AS rn
			FROM ` + from + ` WHERE ` + where + `
		), p AS (
			SELECT t, rid, tot FROM r ORDER BY rn, tot DESC, t, rid COLLATE "C"
			LIMIT ` + itoa(q.limit()) + ` OFFSET ` + itoa(max(q.Offset, 0)) + `
		)
		SELECT time, request_id, model, version, tenant, replica, node, entry, batch_size, status, total_ms,
		       gateway_ms, auth_ms, route_ms, queue_ms, batch_wait_ms, exec_ms, postprocess_ms, downstream_ms, sample_rate,
		       dependency, input_tokens, output_tokens, (SELECT count(*) FROM r)
		FROM p JOIN samples ON samples.time = p.t AND samples.request_id = p.rid AND samples.time >= $1 AND samples.time < $2
		ORDER BY p.tot DESC, p.t, p.rid COLLATE "C"`
	formats := make(pgx.QueryResultFormats, len(sampleColumns)+1)
	for i := range formats {
		formats[i] = pgx.BinaryFormatCode
	}
	rows, err := s.db.Query(ctx, sql, append([]any{formats}, append(args, spreadStride(q.From, q.To))...)...)
	if err != nil {
		return SamplePage{}, wrap("samples page", err)
	}
	defer rows.Close()
	var page SamplePage
	intern := interner{}
	for rows.Next() {
		raw := rows.RawValues()
		var x correlate.Sample
		if err := decodeSampleRow(raw[:len(sampleColumns)], &x, intern); err != nil {
			return SamplePage{}, wrap("samples page", err)
		}
		if n := raw[len(sampleColumns)]; len(n) == 8 {
			page.Total = int(binary.BigEndian.Uint64(n))
		}
		page.Samples = append(page.Samples, x)
	}
	if err := rows.Err(); err != nil {
		return SamplePage{}, wrap("samples page", err)
	}
	if len(page.Samples) == 0 { // no row to carry the count: past the end, or nothing matches
		var err error
		page.Total, err = count()
		return page, err
	}
	return page, nil
}

// SampleByID returns the sample with request id rid in [from, to), or
// ErrNotFound.
func (s *Store) SampleByID(ctx context.Context, from, to time.Time, rid string) (correlate.Sample, error) {
	var out []correlate.Sample
	formats := make(pgx.QueryResultFormats, len(sampleColumns))
	for i := range formats {
		formats[i] = pgx.BinaryFormatCode
	}
	rows, err := s.db.Query(ctx, `
		SELECT time, request_id, model, version, tenant, replica, node, entry, batch_size, status, total_ms,
		       gateway_ms, auth_ms, route_ms, queue_ms, batch_wait_ms, exec_ms, postprocess_ms, downstream_ms, sample_rate,
		       dependency, input_tokens, output_tokens
		FROM samples WHERE time >= $1 AND time < $2 AND request_id = $3 ORDER BY time LIMIT 1`, formats, from, to, rid)
	if err != nil {
		return correlate.Sample{}, wrap("sample", err)
	}
	defer rows.Close()
	for rows.Next() {
		var x correlate.Sample
		if err := decodeSampleRow(rows.RawValues(), &x, interner{}); err != nil {
			return correlate.Sample{}, wrap("sample", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return correlate.Sample{}, wrap("sample", err)
	}
	if len(out) == 0 {
		return correlate.Sample{}, ErrNotFound
	}
	return out[0], nil
}

// Matches reports whether x passes q's filters (window, dimensions,
// slowness): the in-memory twin of the WHERE clause of SamplesPage, used
// on frozen snapshots.
func (q SampleQuery) Matches(x *correlate.Sample) bool {
	if x.Time.Before(q.From) || !x.Time.Before(q.To) {
		return false
	}
	sc := q.Scope
	if (sc.Model != "" && x.Model != sc.Model) || (sc.Version != "" && x.Version != sc.Version) ||
		(sc.Tenant != "" && x.Tenant != sc.Tenant) || (sc.Replica != "" && x.Replica != sc.Replica) ||
		(sc.Node != "" && x.Node != sc.Node) || (q.Entry != "" && x.Entry != q.Entry) || (q.Status != "" && x.Status != q.Status) {
		return false
	}
	if q.BatchMax > 0 && (x.BatchSize < q.BatchMin || x.BatchSize > q.BatchMax) {
		return false
	}
	if q.Slow || q.NotSlow {
		thr, ok := q.SlowMs[x.Model]
		if !ok {
			thr = q.DefaultSlowMs
		}
		if (x.TotalMs >= thr) != q.Slow {
			return false
		}
	}
	return true
}

// PageOf applies q to samples in memory (filter, order, page), with the
// same order as SamplesPage: the sort column (NaN last), then time and
// request id.
func (q SampleQuery) PageOf(samples []correlate.Sample) SamplePage {
	var sel []correlate.Sample
	for i := range samples {
		if q.Matches(&samples[i]) {
			sel = append(sel, samples[i])
		}
	}
	key := func(x *correlate.Sample) float64 {
		switch col := sampleSortColumn(q.Sort); col {
		case "time":
			return float64(x.Time.UnixMicro())
		case "total_ms":
			return x.TotalMs
		default:
			st, _ := correlate.ParseStage(strings.TrimSuffix(col, "_ms"))
			return x.StagesMs[st]
		}
	}
	if q.Spread {
		return q.spreadPageOf(sel)
	}
	sort.SliceStable(sel, func(i, j int) bool {
		a, b := key(&sel[i]), key(&sel[j])
		an, bn := math.IsNaN(a), math.IsNaN(b)
		if an != bn {
			return bn
		}
		if !an && a != b {
			if q.Desc {
				return a > b
			}
			return a < b
		}
		if !sel[i].Time.Equal(sel[j].Time) {
			return sel[i].Time.Before(sel[j].Time)
		}
		return sel[i].RequestID < sel[j].RequestID
	})
	page := SamplePage{Total: len(sel)}
	lo := min(max(q.Offset, 0), len(sel))
	hi := min(lo+q.limit(), len(sel))
	page.Samples = slices.Clone(sel[lo:hi])
	return page
}

// spreadPageOf is the Spread order of SamplesPage in memory: rank within
// (time bucket, replica) by total descending, take the page by rank then
// total, show it by total.
func (q SampleQuery) spreadPageOf(sel []correlate.Sample) SamplePage {
	byTotal := func(a, b *correlate.Sample) int {
		if a.TotalMs != b.TotalMs {
			if a.TotalMs > b.TotalMs {
				return -1
			}
			return 1
		}
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.RequestID, b.RequestID)
	}
	slices.SortStableFunc(sel, func(a, b correlate.Sample) int { return byTotal(&a, &b) })
	type group struct {
		bucket  int64
		replica string
	}
	seen := map[group]int{}
	rank := make([]int, len(sel))
	for i := range sel {
		g := group{spreadBucket(sel[i].Time, q.From, q.To), sel[i].Replica}
		seen[g]++
		rank[i] = seen[g]
	}
	idx := make([]int, len(sel))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if rank[a] != rank[b] {
			return rank[a] - rank[b]
		}
		return byTotal(&sel[a], &sel[b])
	})
	page := SamplePage{Total: len(sel)}
	lo := min(max(q.Offset, 0), len(sel))
	hi := min(lo+q.limit(), len(sel))
	for _, i := range idx[lo:hi] {
		page.Samples = append(page.Samples, sel[i])
	}
	slices.SortStableFunc(page.Samples, func(a, b correlate.Sample) int { return byTotal(&a, &b) })
	return page
}

// SampleTenants lists the distinct tenants of the samples in [from, to):
// the names a public preview must not show.
func (s *Store) SampleTenants(ctx context.Context, from, to time.Time) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT DISTINCT tenant FROM samples WHERE time >= $1 AND time < $2 AND tenant <> ''`, from, to)
	if err != nil {
		return nil, wrap("sample tenants", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
