package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// SampleFilter selects stored samples: a time window and exact matches on
// the scope fields that are set.
type SampleFilter struct {
	From, To time.Time // half-open [From, To)
	Scope    correlate.Scope
	Limit    int // 0 = no limit
	// Bulk is for the analysis, which reads every sample of a window and
	// needs neither order nor request ids: rows come back unordered and
	// RequestID is left empty, which saves a sort and an allocation per row.
	Bulk bool
	// Thin > 1 keeps, of the samples faster than KeepAbove ms, only those
	// whose request id hashes to 0 mod Thin, and multiplies their
	// sample_rate by Thin; slower samples are all kept. Every sample is
	// then kept with a known probability and re-weighted by its inverse, so
	// counts and quantiles stay unbiased while a huge window reads a
	// bounded number of rows.
	Thin      int
	KeepAbove float64
}

// Samples returns the samples of f ordered by time (then request_id).
// Stages that were not reported are NaN.
func (s *Store) Samples(ctx context.Context, f SampleFilter) ([]correlate.Sample, error) {
	var out []correlate.Sample
	err := s.ScanSamples(ctx, f, func(x *correlate.Sample) error {
		out = append(out, *x)
		return nil
	})
	return out, err
}

// ScanSamples calls fn for every sample of f in time order, reusing one
// Sample: fn must copy what it keeps. It is the bulk read path (analysis
// over a million samples): rows arrive in binary format and are decoded by
// hand, and the low-cardinality dimensions (model, version, tenant,
// replica, node, entry, status) are interned, so a row costs one
// allocation (its request id). An error from fn stops the scan and is
// returned unchanged.
func (s *Store) ScanSamples(ctx context.Context, f SampleFilter, fn func(*correlate.Sample) error) error {
	limit := f.Limit
	if limit <= 0 {
		limit = math.MaxInt32
	}
	formats := make(pgx.QueryResultFormats, len(sampleColumns))
	for i := range formats {
		formats[i] = pgx.BinaryFormatCode
	}
	idCol, order := "request_id", "ORDER BY time, request_id"
	if f.Bulk {
		idCol, order = "''::text", ""
	}
	thin := max(f.Thin, 1)
	rows, err := s.db.Query(ctx, `
		SELECT time, `+idCol+`, model, version, tenant, replica, node, entry, batch_size, status, total_ms,
		       gateway_ms, auth_ms, route_ms, queue_ms, batch_wait_ms, exec_ms, postprocess_ms, downstream_ms,
		       CASE WHEN $9 > 1 AND total_ms < $10 THEN sample_rate * $9 ELSE sample_rate END, dependency,
		       input_tokens, output_tokens
		FROM samples
		WHERE time >= $1 AND time < $2
		  AND ($3 = '' OR model = $3) AND ($4 = '' OR version = $4) AND ($5 = '' OR tenant = $5)
		  AND ($6 = '' OR replica = $6) AND ($7 = '' OR node = $7)
		  AND ($9 <= 1 OR total_ms >= $10 OR abs(hashtext(request_id)::bigint) % $9 = 0)
		`+order+`
		LIMIT $8`,
		formats, f.From, f.To, f.Scope.Model, f.Scope.Version, f.Scope.Tenant, f.Scope.Replica, f.Scope.Node, limit,
		thin, f.KeepAbove)
	if err != nil {
		return wrap("samples", err)
	}
	defer rows.Close()
	var (
		x      correlate.Sample
		intern = interner{}
	)
	for rows.Next() {
		if err := decodeSampleRow(rows.RawValues(), &x, intern); err != nil {
			return wrap("samples", err)
		}
		if err := fn(&x); err != nil {
			rows.Close()
			return err
		}
	}
	return wrap("samples", rows.Err())
}

// pgEpoch is where Postgres' binary timestamps count microseconds from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// decodeSampleRow decodes one binary-format row in sampleColumns order.
func decodeSampleRow(raw [][]byte, x *correlate.Sample, intern interner) error {
	if len(raw) != len(sampleColumns) {
		return fmt.Errorf("want %d columns, got %d", len(sampleColumns), len(raw))
	}
	f8 := func(b []byte) float64 {
		if len(b) != 8 {
			return math.NaN() // NULL
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b))
	}
	if len(raw[0]) != 8 || len(raw[8]) != 4 || len(raw[13+correlate.NumStages]) != 4 || len(raw[14+correlate.NumStages]) != 4 {
		return fmt.Errorf("unexpected binary layout of time, batch_size or the token counts")
	}
	x.Time = time.UnixMicro(int64(binary.BigEndian.Uint64(raw[0])) + pgEpoch).UTC()
	if len(raw[1]) > 0 {
		x.RequestID = string(raw[1])
	} else {
		x.RequestID = ""
	}
	x.Model = intern.get(raw[2])
	x.Version = intern.get(raw[3])
	x.Tenant = intern.get(raw[4])
	x.Replica = intern.get(raw[5])
	x.Node = intern.get(raw[6])
	x.Entry = intern.get(raw[7])
	x.BatchSize = int(int32(binary.BigEndian.Uint32(raw[8])))
	x.Status = intern.get(raw[9])
	x.TotalMs = f8(raw[10])
	for i := range x.StagesMs {
		x.StagesMs[i] = f8(raw[11+i])
	}
	x.SampleRate = f8(raw[11+correlate.NumStages])
	x.Dependency = intern.get(raw[12+correlate.NumStages])
	x.InputTokens = int(int32(binary.BigEndian.Uint32(raw[13+correlate.NumStages])))
	x.OutputTokens = int(int32(binary.BigEndian.Uint32(raw[14+correlate.NumStages])))
	return nil
}

// interner shares one string per distinct dimension value.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if len(in) < 1<<16 { // unbounded values (a per-request field) stop being interned
		in[s] = s
	}
	return s
}

// SampleQuantile estimates the q-quantile of total_ms over [from, to)
// the way SampleVolume does (0 when the window holds no sample).
func (s *Store) SampleQuantile(ctx context.Context, from, to time.Time, q float64) (float64, error) {
	_, v, err := s.sampleStats(ctx, from, to, q)
	return v, wrap("sample quantile", err)
}

// SampleVolume estimates how many samples [from, to) holds and their 90th
// percentile of total_ms, from a 2 % block sample (TABLESAMPLE SYSTEM): a
// few milliseconds however large the window, to decide whether to thin.
func (s *Store) SampleVolume(ctx context.Context, from, to time.Time) (estimate int64, p90 float64, err error) {
	n, p90, err := s.sampleStats(ctx, from, to, 0.9)
	return n, p90, wrap("sample volume", err)
}

// minBlockSample is the fewest rows a block sample must hold for its
// figures to stand. Rows lie in time order, so a block is a run of
// neighbours and a 2 % sample of a window of some ten thousand rows is a
// dozen runs: its count was off by a third, varying with how the window
// fell across the daily partitions (the hour of the day). Under this, the
// window is small enough to count exactly (some 100,000 rows at most).
const minBlockSample = 2000

// sampleStats returns the count of [from, to)'s samples and the
// q-quantile of their total_ms: estimated from a 2 % block sample, or
// exact when that sample is too small to stand (see minBlockSample).
func (s *Store) sampleStats(ctx context.Context, from, to time.Time, q float64) (int64, float64, error) {
	var n int64
	var p *float64
	err := s.db.QueryRow(ctx, `
		SELECT count(*), percentile_disc($3::float8) WITHIN GROUP (ORDER BY total_ms)
		FROM samples TABLESAMPLE SYSTEM (2) REPEATABLE (7)
		WHERE time >= $1 AND time < $2`, from, to, q).Scan(&n, &p)
	if err != nil {
		return 0, 0, err
	}
	n *= 50
	if n < 50*minBlockSample {
		if err := s.db.QueryRow(ctx, `
			SELECT count(*), percentile_disc($3::float8) WITHIN GROUP (ORDER BY total_ms)
			FROM samples WHERE time >= $1 AND time < $2`, from, to, q).Scan(&n, &p); err != nil {
			return 0, 0, err
		}
	}
	if p == nil {
		return n, 0, nil
	}
	return n, *p, nil
}
