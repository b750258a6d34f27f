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
	rows, err := s.db.Query(ctx, `
		SELECT time, `+idCol+`, model, version, tenant, replica, node, entry, batch_size, status, total_ms,
		       gateway_ms, auth_ms, route_ms, queue_ms, batch_wait_ms, exec_ms, postprocess_ms, downstream_ms, sample_rate
		FROM samples
		WHERE time >= $1 AND time < $2
		  AND ($3 = '' OR model = $3) AND ($4 = '' OR version = $4) AND ($5 = '' OR tenant = $5)
		  AND ($6 = '' OR replica = $6) AND ($7 = '' OR node = $7)
		`+order+`
		LIMIT $8`,
		formats, f.From, f.To, f.Scope.Model, f.Scope.Version, f.Scope.Tenant, f.Scope.Replica, f.Scope.Node, limit)
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
	if len(raw[0]) != 8 || len(raw[8]) != 4 {
		return fmt.Errorf("unexpected binary layout of time or batch_size")
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
