// Package ingest decodes what clients push — request samples, change
// events, Alertmanager notifications — from a request body into domain
// values (correlate, store), checking every record. Bodies are streamed:
// the framing (JSON array or NDJSON, optionally gzip) yields one record at
// a time with its number, which every error names (request.Error, with
// the status to answer). It needs net/http's request, not a router, so it
// is tested on its own; the API's handlers call it.
package ingest

import (
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/web/request"
)

// Limits bound what one ingest request may hold.
type Limits struct {
	MaxBytes   int64 // decompressed body size
	MaxRecords int   // records per request
	// MaxRecordBytes bounds one record (an NDJSON line or an array
	// element), so one huge line is refused once it passes the bound
	// instead of being buffered whole. 0 = DefaultMaxRecordBytes.
	MaxRecordBytes int
	MaxAge         time.Duration // oldest accepted record time, back from now (0: any)
	MaxFuture      time.Duration // newest accepted record time, ahead of now
	// Oldest, when set, is the earliest record time accepted whatever
	// MaxAge allows, and OldestWhy says why (retention drops older ones).
	Oldest    time.Time
	OldestWhy string
}

// DefaultMaxRecordBytes is the size bound of one record: a sample is a few
// hundred bytes, an event at most ~25 KiB (summary 4 KiB, attrs 16 KiB).
const DefaultMaxRecordBytes = 256 << 10

// The ingest framing of DESIGN §4: a JSON array or NDJSON, optionally
// gzip-compressed, decoded as a stream so a large request never sits in
// memory as text. Records come out one at a time with their 1-based
// number (the NDJSON line, or the array element's index + 1), which every
// error names.

// ingestTypes are the accepted Content-Types. The body's first byte decides
// between array and NDJSON, so application/json may hold either.
var ingestTypes = map[string]bool{
	"application/json":        true,
	"application/x-ndjson":    true,
	"application/ndjson":      true,
	"application/jsonl":       true,
	"application/jsonlines":   true,
	"application/x-jsonlines": true,
}

// errTooLarge is returned by limitReader past the decompressed limit.
var errTooLarge = errors.New("body too large")

// limitReader fails with errTooLarge once more than max bytes were read,
// unlike io.LimitReader, which would end quietly and let a truncated body
// pass for a complete one. It counts bytes for the ingest metrics.
type limitReader struct {
	r   io.Reader
	max int64
	n   int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.max-l.n+1 {
		p = p[:l.max-l.n+1] // read one byte past the limit to tell "exactly max" from "more"
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		return n, errTooLarge
	}
	return n, err
}

// Body is an open ingest request body.
type Body struct {
	records *recordReader
	counted *limitReader // decompressed bytes read so far
	close   func()
}

// Open checks the framing headers and opens the (decompressed, limited)
// body. Errors are *request.Error, with 415 for an unsupported
// Content-Type or Content-Encoding.
func Open(req *http.Request, lim Limits) (*Body, error) {
	ct := req.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !ingestTypes[strings.ToLower(mt)] {
		return nil, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
			Msg: fmt.Sprintf("unsupported Content-Type %q: send application/x-ndjson (one JSON object per line) or application/json (an array or NDJSON)", ct)}
	}
	var body io.Reader = req.Body
	closeFn := func() {}
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, &request.Error{Status: http.StatusBadRequest, Msg: "empty body: send at least one record"}
			}
			return nil, &request.Error{Status: http.StatusBadRequest, Field: "Content-Encoding", Msg: "body is not valid gzip: " + err.Error()}
		}
		body, closeFn = zr, func() { _ = zr.Close() }
	default:
		return nil, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Encoding",
			Msg: fmt.Sprintf("unsupported Content-Encoding %q: send gzip or no encoding", enc)}
	}
	lr := &limitReader{r: body, max: lim.MaxBytes}
	return &Body{
		records: newRecordReader(lr, lim.MaxRecords, lim.MaxBytes, cmp.Or(lim.MaxRecordBytes, DefaultMaxRecordBytes)),
		counted: lr,
		close:   closeFn,
	}, nil
}

// Next returns the next record and its number, or io.EOF after the last.
// The returned bytes are valid until the next call.
func (b *Body) Next() ([]byte, int, error) { return b.records.next() }

// Read is how many decompressed bytes were read so far.
func (b *Body) Read() int64 { return b.counted.n }

// Close releases the decompressor.
func (b *Body) Close() { b.close() }
