package store

import (
	"context"
	"errors"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waterline-dev/waterline/correlate"
)

// sampleColumns is the column order of every samples COPY and SELECT.
var sampleColumns = []string{
	"time", "request_id", "model", "version", "tenant", "replica", "node", "entry", "batch_size", "status", "total_ms",
	"gateway_ms", "auth_ms", "route_ms", "queue_ms", "batch_wait_ms", "exec_ms", "postprocess_ms", "downstream_ms",
	"sample_rate",
}

// SampleStream yields the samples of one write, one at a time: it fills dst
// and returns nil, or returns io.EOF after the last sample. Any other error
// aborts the write, which then stores nothing, and is returned unchanged, so
// a decoder can report the bad line through it.
type SampleStream func(dst *correlate.Sample) error

// InsertSamples stores samples all-or-nothing; see InsertSampleStream.
func (s *Store) InsertSamples(ctx context.Context, samples []correlate.Sample) (accepted, duplicates int, err error) {
	i := 0
	return s.InsertSampleStream(ctx, func(dst *correlate.Sample) error {
		if i == len(samples) {
			return io.EOF
		}
		*dst = samples[i]
		i++
		return nil
	})
}

// InsertSampleStream stores every sample next yields, all-or-nothing, and
// returns how many were new and how many were already stored (same time
// and request_id, including repeats within the stream). Retrying a write is
// therefore harmless.
//
// The fast path COPYs the stream straight into samples inside one
// transaction while next is still decoding, so decoding and the database
// work overlap. A duplicate key (a retry, a repeat within the stream, a
// concurrent writer) or a day without a partition makes it fall back to
// the slow path: the buffered samples go through a temporary table and
// INSERT … ON CONFLICT DO NOTHING. Partitions are created before any
// transaction touches samples, because creating one locks the parent.
func (s *Store) InsertSampleStream(ctx context.Context, next SampleStream) (accepted, duplicates int, err error) {
	buf := make([]correlate.Sample, 1, 1024)
	if err := next(&buf[0]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	// A request usually covers minutes; its neighbour days cover one that
	// crosses midnight without a second round of DDL.
	first := buf[0].Time.UTC().Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(ctx, TableSamples, first.Add(-24*time.Hour), first, first.Add(24*time.Hour)); err != nil {
		return 0, 0, err
	}
	src := &sampleCopySource{store: s, next: next, buf: buf, pending: true,
		days: map[time.Time]bool{first.Add(-24 * time.Hour): true, first: true, first.Add(24 * time.Hour): true}}
	n, fast := s.copySamplesFast(ctx, src)
	if src.err != nil && !errors.Is(src.err, errNeedSlowPath) {
		return 0, 0, src.err // the stream's own error (a bad line): nothing stored
	}
	if fast == nil {
		return int(n), 0, nil
	}
	if !errors.Is(fast, errNeedSlowPath) && !IsUniqueViolation(fast) && !isNoPartition(fast) && !isDeadlock(fast) {
		return 0, 0, wrap("insert samples", fast)
	}
	// Slow path: read the rest of the stream, then insert what is new.
	buf = src.buf
	for {
		buf = append(buf, correlate.Sample{})
		err := next(&buf[len(buf)-1])
		if errors.Is(err, io.EOF) {
			buf = buf[:len(buf)-1]
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if isNoPartition(fast) {
		s.forgetPartitions(TableSamples) // dropped behind our back (retention elsewhere)
	}
	times := make([]time.Time, len(buf))
	for i := range buf {
		times[i] = buf[i].Time
	}
	if err := s.EnsurePartitions(ctx, TableSamples, times...); err != nil {
		return 0, 0, err
	}
	var tag pgconn.CommandTag
	for attempt := 0; ; attempt++ {
		tag, err = s.insertSamplesSlow(ctx, buf)
		if err == nil || !isDeadlock(err) || attempt == 2 {
			break
		}
	}
	if err != nil {
		return 0, 0, wrap("insert samples", err)
	}
	return int(tag.RowsAffected()), len(buf) - int(tag.RowsAffected()), nil
}

// copySamplesFast COPYs src into samples in one transaction. It returns the
// rows copied, or the error that aborted the transaction.
func (s *Store) copySamplesFast(ctx context.Context, src *sampleCopySource) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		n, err = tx.CopyFrom(ctx, pgx.Identifier{TableSamples}, sampleColumns, src)
		if src.err != nil {
			return src.err
		}
		return err
	})
	return n, err
}

// insertSamplesSlow inserts the new samples of buf through a temporary
// table. ON CONFLICT waits for a concurrent writer of the same key and then
// skips it, and the ORDER BY makes concurrent writers take row locks in the
// same order, so overlapping writes neither fail nor deadlock.
func (s *Store) insertSamplesSlow(ctx context.Context, buf []correlate.Sample) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE samples_staging (LIKE samples INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
			return err
		}
		i := 0
		rows := &sampleRows{next: func() *correlate.Sample {
			if i == len(buf) {
				return nil
			}
			i++
			return &buf[i-1]
		}}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"samples_staging"}, sampleColumns, rows); err != nil {
			return err
		}
		var err error
		tag, err = tx.Exec(ctx, `INSERT INTO samples SELECT DISTINCT ON (time, request_id) * FROM samples_staging
			ORDER BY time, request_id ON CONFLICT DO NOTHING`)
		return err
	})
	return tag, err
}

// errNeedSlowPath stops the fast COPY when a sample falls on a day whose
// partition is not known to exist.
var errNeedSlowPath = errors.New("sample day needs a new partition")

// sampleCopySource feeds the fast COPY from the stream, keeping every
// sample in buf for the slow path.
type sampleCopySource struct {
	store   *Store
	next    SampleStream
	buf     []correlate.Sample
	pending bool // buf's last element is read but not yet handed to COPY
	days    map[time.Time]bool
	err     error
	vals    []any
}

func (c *sampleCopySource) Next() bool {
	if c.err != nil {
		return false
	}
	if c.pending {
		c.pending = false
	} else {
		c.buf = append(c.buf, correlate.Sample{})
		if err := c.next(&c.buf[len(c.buf)-1]); err != nil {
			c.buf = c.buf[:len(c.buf)-1]
			if !errors.Is(err, io.EOF) {
				c.err = err
			}
			return false
		}
	}
	day := c.buf[len(c.buf)-1].Time.UTC().Truncate(24 * time.Hour)
	if !c.days[day] {
		if !c.store.partitionKnown(TableSamples, day) {
			c.err = errNeedSlowPath
			return false
		}
		c.days[day] = true
	}
	return true
}

func (c *sampleCopySource) Values() ([]any, error) {
	c.vals = sampleValues(c.vals, &c.buf[len(c.buf)-1])
	return c.vals, nil
}

func (c *sampleCopySource) Err() error { return c.err }

// sampleRows is a CopyFromSource over samples already in memory.
type sampleRows struct {
	next func() *correlate.Sample
	cur  *correlate.Sample
	vals []any
}

func (r *sampleRows) Next() bool { r.cur = r.next(); return r.cur != nil }
func (r *sampleRows) Values() ([]any, error) {
	r.vals = sampleValues(r.vals, r.cur)
	return r.vals, nil
}
func (r *sampleRows) Err() error { return nil }

// sampleValues lays out one sample in sampleColumns order. It hands pgx
// pointers, not values, so building a row allocates nothing: pgx encodes
// the row before asking for the next one.
func sampleValues(vals []any, x *correlate.Sample) []any {
	vals = append(vals[:0], &x.Time, &x.RequestID, &x.Model, &x.Version, &x.Tenant, &x.Replica, &x.Node, &x.Entry,
		&x.BatchSize, &x.Status, &x.TotalMs)
	for i := range x.StagesMs {
		if math.IsNaN(x.StagesMs[i]) {
			vals = append(vals, nil)
		} else {
			vals = append(vals, &x.StagesMs[i])
		}
	}
	return append(vals, &x.SampleRate)
}

func isNoPartition(err error) bool {
	var pgErr *pgconn.PgError
	// 23514 check_violation: "no partition of relation … found for row".
	return errors.As(err, &pgErr) && pgErr.Code == "23514"
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
