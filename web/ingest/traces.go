package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/web/request"
)

var traceBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledTraceBuf bounds the buffers kept for reuse: an exporter's batch
// of 512 spans is about 60 KB (bench/otlp_test.go); rare huge bodies are
// left to the GC. The decoders copy what they keep (protobuf and
// JSON alike), so a buffer is free again once decoding returns.
const maxPooledTraceBuf = 4 << 20

// TraceEncoding is the OTLP/HTTP encoding a request's Content-Type names
// (protobuf unless it says JSON), so that even an error is answered in
// the encoding the client reads.
func TraceEncoding(req *http.Request) otlp.Encoding {
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if strings.EqualFold(mt, "application/json") {
		return otlp.JSON
	}
	return otlp.Protobuf
}

// OTLPStatus maps an error status onto the one OTLP/HTTP exporters act on
// as meant: they retry only 429/502/503/504, so a body that stalled (408,
// the network's fault) is a 503, with retry true (send Retry-After).
func OTLPStatus(status int) (out int, retry bool) {
	if status == http.StatusRequestTimeout {
		return http.StatusServiceUnavailable, true
	}
	return status, false
}

// Traces reads an OTLP/HTTP export request (POST /v1/traces): protobuf or
// JSON by Content-Type, optionally gzip, at most lim.MaxBytes once
// decompressed. A protobuf message cannot be decoded as a stream, so the
// body is read whole; the limit (and the route's concurrency bound) keep
// that bounded.
func Traces(req *http.Request, lim Limits) (otlp.Request, int64, error) {
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	mt = strings.ToLower(mt)
	if err != nil || (mt != "application/x-protobuf" && mt != "application/json" && mt != "application/protobuf") {
		return otlp.Request{}, 0, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
			Msg: fmt.Sprintf("unsupported Content-Type %q: send application/x-protobuf or application/json (OTLP/HTTP)", req.Header.Get("Content-Type"))}
	}
	var body io.Reader = req.Body
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return otlp.Request{}, 0, &request.Error{Status: http.StatusBadRequest, Field: "Content-Encoding", Msg: "body is not valid gzip: " + err.Error()}
		}
		defer zr.Close()
		body = zr
	default:
		return otlp.Request{}, 0, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Encoding",
			Msg: fmt.Sprintf("unsupported Content-Encoding %q: send gzip or no encoding", enc)}
	}
	lr := &limitReader{r: body, max: lim.MaxBytes}
	// The body is only read while decoding (the decoder copies what it
	// keeps), so its buffer is reused across requests.
	buf := traceBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledTraceBuf {
			buf.Reset()
			traceBufs.Put(buf)
		}
	}()
	if n := req.ContentLength; n > 0 && n <= lim.MaxBytes {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to see the end without growing
	}
	if _, err := buf.ReadFrom(lr); err != nil {
		if errors.Is(err, errTooLarge) {
			return otlp.Request{}, lr.n, &request.Error{Status: http.StatusRequestEntityTooLarge,
				Msg: fmt.Sprintf("body larger than %d bytes (decompressed): send smaller batches", lim.MaxBytes)}
		}
		var re *request.Error
		if errors.As(err, &re) {
			return otlp.Request{}, lr.n, re
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return otlp.Request{}, lr.n, &request.Error{Status: http.StatusRequestTimeout, Msg: "the request body did not arrive within the request time limit"}
		}
		return otlp.Request{}, lr.n, &request.Error{Status: http.StatusBadRequest, Msg: "reading the body: " + err.Error()}
	}
	enc := otlp.Protobuf
	if mt == "application/json" {
		enc = otlp.JSON
	}
	out, err := otlp.Decode(buf.Bytes(), enc)
	if err != nil {
		return otlp.Request{}, lr.n, &request.Error{Status: http.StatusBadRequest, Msg: err.Error()}
	}
	return out, lr.n, nil
}
