package web

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
)

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

// ingestBody is an open ingest request body.
type ingestBody struct {
	records *recordReader
	counted *limitReader // decompressed bytes read so far
	close   func()
}

// openIngestBody checks the framing headers and opens the (decompressed,
// limited) body. Errors are *inputError with 415 for an unsupported
// Content-Type or Content-Encoding.
func (s *Server) openIngestBody(c echo.Context) (*ingestBody, error) {
	req := c.Request()
	ct := req.Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !ingestTypes[strings.ToLower(mt)] {
		return nil, &inputError{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
			Msg: fmt.Sprintf("unsupported Content-Type %q: send application/x-ndjson (one JSON object per line) or application/json (an array or NDJSON)", ct)}
	}
	var body io.Reader = req.Body
	closeFn := func() {}
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get(echo.HeaderContentEncoding))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, &inputError{Status: http.StatusBadRequest, Msg: "empty body: send at least one record"}
			}
			return nil, &inputError{Status: http.StatusBadRequest, Field: "Content-Encoding", Msg: "body is not valid gzip: " + err.Error()}
		}
		body, closeFn = zr, func() { _ = zr.Close() }
	default:
		return nil, &inputError{Status: http.StatusUnsupportedMediaType, Field: "Content-Encoding",
			Msg: fmt.Sprintf("unsupported Content-Encoding %q: send gzip or no encoding", enc)}
	}
	lr := &limitReader{r: body, max: s.cfg.IngestMaxBytes}
	return &ingestBody{
		records: newRecordReader(lr, s.cfg.IngestMaxLines, s.cfg.IngestMaxBytes),
		counted: lr,
		close:   closeFn,
	}, nil
}

// recordReader splits a body into JSON records.
type recordReader struct {
	br       *bufio.Reader
	maxLines int
	maxBytes int64
	started  bool
	ended    bool // io.EOF was returned: later calls return it again
	array    bool
	dec      *json.Decoder // array mode
	line     int           // NDJSON: physical line; array: element number
	records  int
	long     []byte // NDJSON line longer than the bufio buffer
	raw      json.RawMessage
}

func newRecordReader(r io.Reader, maxLines int, maxBytes int64) *recordReader {
	return &recordReader{br: bufio.NewReaderSize(r, 64<<10), maxLines: maxLines, maxBytes: maxBytes}
}

// next returns the next record and its number, or io.EOF after the last.
// The returned bytes are valid until the next call. Errors are
// *inputError (400 bad framing, 413 too big or too many records) or a read
// error of the connection.
func (r *recordReader) next() ([]byte, int, error) {
	// The store's slow path reads on after the COPY has seen the end; an
	// array's end must not be consumed twice.
	if r.ended {
		return nil, 0, io.EOF
	}
	raw, line, err := r.read()
	if errors.Is(err, io.EOF) {
		r.ended = true
	}
	return raw, line, err
}

func (r *recordReader) read() ([]byte, int, error) {
	if !r.started {
		r.started = true
		b, err := r.peekNonSpace()
		if errors.Is(err, io.EOF) {
			return nil, 0, &inputError{Status: http.StatusBadRequest, Msg: "empty body: send at least one record"}
		}
		if err != nil {
			return nil, 0, r.readErr(err, r.line)
		}
		if b == '[' {
			r.array = true
			r.dec = json.NewDecoder(r.br)
			if _, err := r.dec.Token(); err != nil {
				return nil, 0, r.readErr(err, r.line)
			}
		}
	}
	if r.records >= r.maxLines {
		// Is there one more? Only then is the request over the limit.
		if r.array {
			if !r.dec.More() {
				return r.endArray()
			}
		} else if _, err := r.peekNonSpace(); errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		return nil, 0, &inputError{Status: http.StatusRequestEntityTooLarge, Line: r.line + 1,
			Msg: fmt.Sprintf("more than %d records in one request: split it", r.maxLines)}
	}
	if r.array {
		return r.nextElement()
	}
	return r.nextLine()
}

func (r *recordReader) nextElement() ([]byte, int, error) {
	if !r.dec.More() {
		return r.endArray()
	}
	r.line++
	r.raw = r.raw[:0]
	if err := r.dec.Decode(&r.raw); err != nil {
		return nil, r.line, r.readErr(err, r.line)
	}
	r.records++
	return r.raw, r.line, nil
}

// endArray consumes "]" and checks nothing but space follows.
func (r *recordReader) endArray() ([]byte, int, error) {
	if _, err := r.dec.Token(); err != nil {
		return nil, 0, r.readErr(err, r.line)
	}
	if _, err := r.dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil || isSyntax(err) {
			return nil, 0, &inputError{Status: http.StatusBadRequest, Line: r.line + 1, Msg: "unexpected data after the closing ] of the array"}
		}
		return nil, 0, r.readErr(err, r.line)
	}
	if r.records == 0 {
		return nil, 0, &inputError{Status: http.StatusBadRequest, Msg: "empty array: send at least one record"}
	}
	return nil, 0, io.EOF
}

// nextLine returns the next non-blank line.
func (r *recordReader) nextLine() ([]byte, int, error) {
	for {
		b, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.long = append(r.long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = r.br.ReadSlice('\n')
				r.long = append(r.long, b...)
			}
			b = r.long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, r.line + 1, r.readErr(err, r.line+1)
		}
		if len(b) == 0 && errors.Is(err, io.EOF) {
			if r.records == 0 {
				return nil, 0, &inputError{Status: http.StatusBadRequest, Msg: "empty body: send at least one record"}
			}
			return nil, 0, io.EOF
		}
		r.line++
		if t := bytes.TrimSpace(b); len(t) > 0 {
			r.records++
			return t, r.line, nil
		}
		if errors.Is(err, io.EOF) {
			return r.nextLine()
		}
	}
}

// peekNonSpace skips leading white space and returns the next byte unread.
func (r *recordReader) peekNonSpace() (byte, error) {
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r':
		case '\n':
			if !r.array {
				r.line++
			}
		default:
			return b[0], nil
		}
		_, _ = r.br.Discard(1)
	}
}

// readErr turns a framing or read error into the error to answer with.
// line is the record being read when it happened.
func (r *recordReader) readErr(err error, line int) error {
	if line == 0 {
		line = 1
	}
	var (
		se *json.SyntaxError
		fe flate.CorruptInputError
	)
	switch {
	case errors.Is(err, errTooLarge):
		return &inputError{Status: http.StatusRequestEntityTooLarge, Line: line,
			Msg: fmt.Sprintf("body larger than %d bytes (after decompression): split it", r.maxBytes)}
	case errors.As(err, &se):
		return &inputError{Status: http.StatusBadRequest, Line: line, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &inputError{Status: http.StatusBadRequest, Line: line, Msg: "truncated body: the JSON ends in the middle of a record"}
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &fe):
		return &inputError{Status: http.StatusBadRequest, Line: line, Field: "Content-Encoding", Msg: "body is not valid gzip: " + err.Error()}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &inputError{Status: http.StatusRequestTimeout, Line: line,
			Msg: "the request body did not arrive within the request time limit"}
	}
	// Any other read error is the client's connection failing; it is not
	// the database's (so not a 503).
	return &inputError{Status: http.StatusBadRequest, Line: line, Msg: "reading the request body failed: " + err.Error()}
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// decodeRecord decodes one record into v, rejecting unknown fields, and
// turns decoding errors into an inputError naming the line and field.
func decodeRecord(raw []byte, line int, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil {
		if d.More() {
			return &inputError{Status: http.StatusBadRequest, Line: line, Msg: "more than one JSON value on one line"}
		}
		return nil
	}
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		fe *fieldError
	)
	switch {
	case errors.As(err, &fe):
		return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Field: fe.field, Msg: fe.msg}
	case errors.As(err, &se):
		return &inputError{Status: http.StatusBadRequest, Line: line, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &inputError{Status: http.StatusBadRequest, Line: line, Msg: "invalid JSON: the record is truncated"}
	case errors.As(err, &te):
		want := te.Type.String()
		switch te.Type.Kind().String() {
		case "float64", "int", "int64":
			want = "a number"
		case "string":
			want = "a string"
		case "map", "struct":
			want = "an object"
		}
		return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Field: te.Field,
			Msg: fmt.Sprintf("want %s, got %s", want, te.Value)}
	}
	if f, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		f = strings.TrimSuffix(f, `"`)
		return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Field: f, Msg: "unknown field " + f}
	}
	if !strings.HasPrefix(raw2str(raw), "{") {
		return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Msg: "want a JSON object"}
	}
	return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Msg: strings.TrimPrefix(err.Error(), "json: ")}
}

func raw2str(b []byte) string { return string(bytes.TrimSpace(b[:min(len(b), 1)])) }

// fieldError is a bad value found while decoding a nested field (such as
// one entry of stages_ms).
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// ingestResult is the answer to a successful ingest request.
type ingestResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// countIngest records what an ingest request stored.
func (s *Server) countIngest(kind string, accepted, duplicates int) {
	s.metrics.ingestRecords.WithLabelValues(kind, "accepted").Add(float64(accepted))
	s.metrics.ingestRecords.WithLabelValues(kind, "duplicate").Add(float64(duplicates))
}

// maxDrain bounds how much of a rejected body is read and thrown away.
const maxDrain = 64 << 20

// ingestFailed counts a rejected ingest request and returns err for the
// error handler. A client still sending a body it has not finished would
// otherwise see a reset connection instead of the error, so the rest of a
// rejected body is drained first (within maxDrain and the request's time
// limit).
func (s *Server) ingestFailed(c echo.Context, kind string, err error) error {
	reason := "store"
	var ie *inputError
	if errors.As(err, &ie) {
		switch ie.Status {
		case http.StatusBadRequest:
			reason = "syntax"
		case http.StatusRequestEntityTooLarge:
			reason = "too_large"
		case http.StatusUnsupportedMediaType:
			reason = "media_type"
		default:
			reason = "invalid"
		}
		if ie.Status != http.StatusRequestEntityTooLarge {
			_, _ = io.Copy(io.Discard, io.LimitReader(c.Request().Body, maxDrain))
		}
	}
	s.metrics.ingestErrors.WithLabelValues(kind, reason).Inc()
	return err
}
