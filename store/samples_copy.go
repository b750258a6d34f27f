package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// Samples are COPYed in PostgreSQL's binary format, encoded here rather
// than through pgx's type map: the row shape is fixed, and encoding it by
// hand costs a fraction of the generic path, which matters because the
// encoder shares the CPU with JSON decoding on the ingest hot path.

// copySamplesSQL is the COPY statement matching appendSampleRow.
var copySamplesSQL = func(table string) string {
	return "COPY " + table + " (" + strings.Join(sampleColumns, ", ") + ") FROM STDIN BINARY"
}

// copySamples COPYs what next yields into table on tx's connection. next
// returns nil after the last sample; its error aborts the COPY and is
// returned unchanged.
func copySamples(ctx context.Context, tx pgx.Tx, table string, next func() (*correlate.Sample, error)) (int64, error) {
	r := &sampleCopyReader{next: next}
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, r, copySamplesSQL(table))
	// pgconn may return while its writer goroutine is still inside Read;
	// close waits for that Read, so next is never called concurrently
	// with the caller's later use of the stream.
	srcErr := r.close()
	if srcErr != nil {
		return 0, srcErr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// sampleCopyReader is an io.Reader of the binary COPY stream of samples.
type sampleCopyReader struct {
	mu      sync.Mutex
	next    func() (*correlate.Sample, error)
	buf     []byte
	off     int
	started bool
	done    bool
	closed  bool
	err     error // from next
}

// errCopyClosed stops a Read that comes after close.
var errCopyClosed = errors.New("copy source closed")

func (r *sampleCopyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errCopyClosed
	}
	if r.err != nil {
		return 0, r.err
	}
	for r.off == len(r.buf) {
		if r.done {
			return 0, io.EOF
		}
		r.buf, r.off = r.buf[:0], 0
		if !r.started {
			r.started = true
			r.buf = append(r.buf, "PGCOPY\n\377\r\n\000"...)
			r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // flags
			r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // header extension length
		}
		for len(r.buf) < 60<<10 {
			x, err := r.next()
			if err != nil {
				r.err = err
				return 0, err
			}
			if x == nil {
				r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // trailer: field count -1
				r.done = true
				break
			}
			if r.buf, err = appendSampleRow(r.buf, x); err != nil {
				r.err = err
				return 0, err
			}
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// close ends the reader and returns the error next gave, if any.
func (r *sampleCopyReader) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.err == errCopyClosed {
		return nil
	}
	return r.err
}

// appendSampleRow appends one row in sampleColumns order.
func appendSampleRow(b []byte, x *correlate.Sample) ([]byte, error) {
	if x.BatchSize < 0 || x.BatchSize > math.MaxInt32 {
		return b, fmt.Errorf("batch_size %d out of range", x.BatchSize)
	}
	if x.InputTokens < 0 || x.InputTokens > math.MaxInt32 || x.OutputTokens < 0 || x.OutputTokens > math.MaxInt32 {
		return b, fmt.Errorf("token counts %d, %d out of range", x.InputTokens, x.OutputTokens)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(sampleColumns)))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(x.Time.UnixMicro()-pgEpoch))
	for _, s := range [...]string{x.RequestID, x.Model, x.Version, x.Tenant, x.Replica, x.Node, x.Entry} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint32(b, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(int32(x.BatchSize)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(x.Status)))
	b = append(b, x.Status...)
	b = appendFloat8(b, x.TotalMs)
	for _, v := range x.StagesMs {
		if math.IsNaN(v) {
			b = binary.BigEndian.AppendUint32(b, 0xffffffff) // NULL
			continue
		}
		b = appendFloat8(b, v)
	}
	b = appendFloat8(b, x.SampleRate)
	b = binary.BigEndian.AppendUint32(b, uint32(len(x.Dependency)))
	b = append(b, x.Dependency...)
	for _, n := range [...]int{x.InputTokens, x.OutputTokens} {
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(int32(n)))
	}
	return b, nil
}

func appendFloat8(b []byte, v float64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}
