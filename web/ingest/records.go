package ingest

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/waterline-dev/waterline/web/request"
)

// recordReader splits a body into JSON records.
type recordReader struct {
	br       *bufio.Reader
	maxLines int
	maxBytes int64
	started  bool
	ended    bool // io.EOF was returned: later calls return it again
	array    bool
	// stream: JSON values one after another, not one per line (a
	// pretty-printed object, as jq prints it): read as an array's
	// elements without the brackets.
	stream  bool
	dec     *json.Decoder // array and stream modes
	line    int           // NDJSON: physical line; array: element number
	records int
	long    []byte // NDJSON line longer than the bufio buffer
	raw     json.RawMessage
	// maxRecord bounds one record. NDJSON stops collecting a line past
	// it; in an array, the decoder reads through cap, which refuses to
	// read more than maxRecord past the element's start.
	maxRecord int
	cap       *capReader
}

func newRecordReader(r io.Reader, maxLines int, maxBytes int64, maxRecord int) *recordReader {
	return &recordReader{br: bufio.NewReaderSize(r, 64<<10), maxLines: maxLines, maxBytes: maxBytes, maxRecord: maxRecord}
}

// errRecordTooLarge is returned by capReader past one record's bound.
var errRecordTooLarge = errors.New("record too large")

// capReader lets a json.Decoder read only up to limit (an offset in the
// stream), so that one huge array element is refused without being
// buffered whole.
type capReader struct {
	r     io.Reader
	n     int64 // bytes read so far
	limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	left := c.limit - c.n
	if left <= 0 {
		return 0, errRecordTooLarge
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bound lets the decoder read one more record from where it stands (a
// little slack for the white space and comma around it).
func (r *recordReader) bound() {
	r.cap.limit = r.dec.InputOffset() + int64(r.maxRecord) + 1024
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
			return nil, 0, &request.Error{Status: http.StatusBadRequest, Msg: "empty body: send at least one record"}
		}
		if err != nil {
			return nil, 0, r.readErr(err, r.line)
		}
		switch {
		case b == '[':
			// Elements are numbered from the array's start: the blank
			// lines before it were counted as NDJSON lines.
			r.array, r.line = true, 0
			r.cap = &capReader{r: r.br}
			r.dec = json.NewDecoder(r.cap)
			r.bound()
			if _, err := r.dec.Token(); err != nil {
				return nil, 0, r.readErr(err, r.line)
			}
		case b == '{' && !r.firstLineWhole():
			// Not NDJSON: a multi-line object read line by line was
			// "truncated" at its first line. Records are numbered.
			r.array, r.stream, r.line = true, true, 0
			r.cap = &capReader{r: r.br}
			r.dec = json.NewDecoder(r.cap)
			r.bound()
		}
	}
	if r.records >= r.maxLines {
		// Is there one more? Only then is the request over the limit.
		if r.array {
			if !r.dec.More() {
				return r.end()
			}
		} else if _, err := r.peekNonSpace(); errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		return nil, 0, &request.Error{Status: http.StatusRequestEntityTooLarge, Line: r.line + 1,
			Msg: fmt.Sprintf("more than %d records in one request: split it", r.maxLines)}
	}
	if r.array {
		return r.nextElement()
	}
	return r.nextLine()
}

func (r *recordReader) nextElement() ([]byte, int, error) {
	if !r.dec.More() {
		return r.end()
	}
	r.line++
	r.raw = r.raw[:0]
	r.bound()
	if err := r.dec.Decode(&r.raw); err != nil {
		return nil, r.line, r.readErr(err, r.line)
	}
	r.records++
	return r.raw, r.line, nil
}

// firstLineWhole reports whether the body's first line holds a whole
// JSON value (maybe with more after it, which NDJSON refuses), rather than
// the start of one that goes on over the next lines. A first line longer
// than the read buffer is taken for whole.
func (r *recordReader) firstLineWhole() bool {
	peek, err := r.br.Peek(r.br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return true // the line-by-line reader reports the read error
	}
	i := bytes.IndexByte(peek, '\n')
	if i < 0 {
		return len(peek) == r.br.Size() || errors.Is(err, io.EOF) // the whole body is one line
	}
	var v json.RawMessage
	return !errors.Is(json.NewDecoder(bytes.NewReader(peek[:i])).Decode(&v), io.ErrUnexpectedEOF)
}

// end ends an array (its "]") or a stream of values.
func (r *recordReader) end() ([]byte, int, error) {
	if !r.stream {
		return r.endArray()
	}
	if _, err := r.dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil || isSyntax(err) {
			return nil, 0, &request.Error{Status: http.StatusBadRequest, Line: r.line + 1, Msg: "unexpected data after the last JSON object"}
		}
		return nil, 0, r.readErr(err, r.line)
	}
	return nil, 0, io.EOF
}

// endArray consumes "]" and checks nothing but space follows.
func (r *recordReader) endArray() ([]byte, int, error) {
	r.bound()
	if _, err := r.dec.Token(); err != nil {
		return nil, 0, r.readErr(err, r.line)
	}
	if _, err := r.dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil || isSyntax(err) {
			return nil, 0, &request.Error{Status: http.StatusBadRequest, Line: r.line + 1, Msg: "unexpected data after the closing ] of the array"}
		}
		return nil, 0, r.readErr(err, r.line)
	}
	if r.records == 0 {
		return nil, 0, &request.Error{Status: http.StatusBadRequest, Msg: "empty array: send at least one record"}
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
				if len(r.long) > r.maxRecord {
					return nil, r.line + 1, r.readErr(errRecordTooLarge, r.line+1)
				}
				b, err = r.br.ReadSlice('\n')
				r.long = append(r.long, b...)
			}
			b = r.long
		}
		if len(b) > r.maxRecord && len(bytes.TrimSpace(b)) > r.maxRecord {
			return nil, r.line + 1, r.readErr(errRecordTooLarge, r.line+1)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, r.line + 1, r.readErr(err, r.line+1)
		}
		if len(b) == 0 && errors.Is(err, io.EOF) {
			if r.records == 0 {
				return nil, 0, &request.Error{Status: http.StatusBadRequest, Msg: "empty body: send at least one record"}
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
	case errors.Is(err, errRecordTooLarge):
		return &request.Error{Status: http.StatusRequestEntityTooLarge, Line: line,
			Msg: fmt.Sprintf("record larger than %d bytes: a sample or event is a few KiB at most (an event's summary up to 4 KiB, attrs up to 16 KiB)", r.maxRecord)}
	case errors.Is(err, errTooLarge):
		return &request.Error{Status: http.StatusRequestEntityTooLarge, Line: line,
			Msg: fmt.Sprintf("body larger than %d bytes (after decompression): split it", r.maxBytes)}
	case errors.As(err, &se):
		return &request.Error{Status: http.StatusBadRequest, Line: line, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &request.Error{Status: http.StatusBadRequest, Line: line, Msg: "truncated body: the JSON ends in the middle of a record"}
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &fe):
		return &request.Error{Status: http.StatusBadRequest, Line: line, Field: "Content-Encoding", Msg: "body is not valid gzip: " + err.Error()}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &request.Error{Status: http.StatusRequestTimeout, Line: line,
			Msg: "the request body did not arrive within the request time limit"}
	}
	// Any other read error is the client's connection failing; it is not
	// the database's (so not a 503).
	return &request.Error{Status: http.StatusBadRequest, Line: line, Msg: "reading the request body failed: " + err.Error()}
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}
