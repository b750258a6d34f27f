package store

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waterline-dev/waterline/correlate"
)

// sampleColumns is the column order of every samples COPY and SELECT.
var sampleColumns = []string{
	"time", "request_id", "model", "version", "tenant", "replica", "node", "entry", "batch_size", "status", "total_ms",
	"gateway_ms", "auth_ms", "route_ms", "queue_ms", "batch_wait_ms", "exec_ms", "postprocess_ms", "downstream_ms",
	"sample_rate", "dependency", "input_tokens", "output_tokens",
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
	buf := &sampleBuf{}
	if err := next(buf.add()); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	// A request usually covers minutes; its neighbour days cover one that
	// crosses midnight without a second round of DDL.
	first := buf.at(0).Time.UTC().Truncate(24 * time.Hour)
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
	for {
		err := next(buf.add())
		if errors.Is(err, io.EOF) {
			buf.pop()
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if isNoPartition(fast) {
		s.forgetPartitions(TableSamples) // dropped behind our back (retention elsewhere)
	}
	times := make([]time.Time, buf.len())
	for i := range times {
		times[i] = buf.at(i).Time
	}
	if err := s.EnsurePartitions(ctx, TableSamples, times...); err != nil {
		return 0, 0, err
	}
	// A deadlock with a concurrent fast-path COPY (which takes its keys in
	// the stream's order) can recur while that writer is still going:
	// retry after a short, growing, jittered pause, not at once.
	var tag pgconn.CommandTag
	for attempt := 0; ; attempt++ {
		tag, err = s.insertSamplesSlow(ctx, buf)
		if err == nil || !isDeadlock(err) || attempt == 7 {
			break
		}
		pause := time.Duration(attempt+1) * (10*time.Millisecond + time.Duration(rand.Int64N(int64(20*time.Millisecond))))
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(pause):
		}
	}
	if err != nil {
		return 0, 0, wrap("insert samples", err)
	}
	return int(tag.RowsAffected()), buf.len() - int(tag.RowsAffected()), nil
}

// copySamplesFast COPYs src into samples in one transaction. It returns the
// rows copied, or the error that aborted the transaction.
func (s *Store) copySamplesFast(ctx context.Context, src *sampleCopySource) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		n, err = copySamples(ctx, tx, TableSamples, src.nextRow)
		return err
	})
	return n, err
}

// insertSamplesSlow inserts the new samples of buf through a temporary
// table. ON CONFLICT waits for a concurrent writer of the same key and then
// skips it, and the ORDER BY makes concurrent writers take row locks in the
// same order, so overlapping writes neither fail nor deadlock.
func (s *Store) insertSamplesSlow(ctx context.Context, buf *sampleBuf) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE samples_staging (LIKE samples INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
			return err
		}
		i := 0
		if _, err := copySamples(ctx, tx, "samples_staging", func() (*correlate.Sample, error) {
			if i == buf.len() {
				return nil, nil
			}
			i++
			return buf.at(i - 1), nil
		}); err != nil {
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
	buf     *sampleBuf
	pending bool // buf's last element is read but not yet handed to COPY
	days    map[time.Time]bool
	err     error // the stream's error, or errNeedSlowPath
}

// nextRow returns the next sample for COPY, nil at the end.
func (c *sampleCopySource) nextRow() (*correlate.Sample, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.pending {
		c.pending = false
	} else {
		if err := c.next(c.buf.add()); err != nil {
			c.buf.pop()
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			c.err = err
			return nil, err
		}
	}
	x := c.buf.at(c.buf.len() - 1)
	day := x.Time.UTC().Truncate(24 * time.Hour)
	if !c.days[day] {
		if !c.store.partitionKnown(TableSamples, day) {
			c.err = errNeedSlowPath
			return nil, c.err
		}
		c.days[day] = true
	}
	return x, nil
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

// sampleBuf holds a request's samples in fixed-size chunks: growing it
// never copies what is already there (a plain slice would, on the hot
// path, and the samples hold pointers the GC must then rescan).
type sampleBuf struct {
	chunks [][]correlate.Sample
	n      int
}

const sampleChunk = 1024

// add appends a zero sample and returns it.
func (b *sampleBuf) add() *correlate.Sample {
	if b.n == len(b.chunks)*sampleChunk {
		b.chunks = append(b.chunks, make([]correlate.Sample, sampleChunk))
	}
	x := &b.chunks[b.n/sampleChunk][b.n%sampleChunk]
	*x = correlate.Sample{}
	b.n++
	return x
}

// pop drops the last sample.
func (b *sampleBuf) pop() { b.n-- }

func (b *sampleBuf) len() int { return b.n }

func (b *sampleBuf) at(i int) *correlate.Sample { return &b.chunks[i/sampleChunk][i%sampleChunk] }
