// Package otlp turns OpenTelemetry traces into Waterline's request
// samples: it decodes OTLP export requests (protobuf or JSON, with the
// official message types of go.opentelemetry.io/proto/otlp), maps spans
// onto stages and attributes onto dimensions (Config), and assembles the
// spans of each trace — which may arrive in several requests, children
// before parents — in a bounded buffer until the trace can become one
// sample (Assembler).
//
// It knows no HTTP and no database: web/ingest hands it the body and
// web/api its answer; the samples go to a Sink (the store).
package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Encoding is how an export request is encoded (OTLP/HTTP's two).
type Encoding int

const (
	Protobuf Encoding = iota // application/x-protobuf
	JSON                     // application/json
)

// Request is one decoded export request.
type Request = coltracepb.ExportTraceServiceRequest

// Response is the answer to one.
type Response = coltracepb.ExportTraceServiceResponse

// Decode parses an export request.
func Decode(body []byte, enc Encoding) (*Request, error) {
	req := &Request{}
	switch enc {
	case JSON:
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, req); err != nil {
			return nil, fmt.Errorf("not an OTLP/JSON ExportTraceServiceRequest: %v", err)
		}
		fixJSONIDs(req)
	default:
		if err := proto.Unmarshal(body, req); err != nil {
			return nil, fmt.Errorf("not an OTLP/protobuf ExportTraceServiceRequest: %v", err)
		}
	}
	return req, nil
}

// Encode renders a response in the request's encoding.
func Encode(res *Response, enc Encoding) ([]byte, error) {
	if enc == JSON {
		return protojson.Marshal(res)
	}
	return proto.Marshal(res)
}

// EncodeStatus renders the body OTLP/HTTP gives a failed request: a
// google.rpc.Status with the gRPC code matching the HTTP status and the
// reason, in the request's encoding.
func EncodeStatus(httpStatus int, msg string, enc Encoding) []byte {
	code := int32(2) // UNKNOWN
	switch {
	case httpStatus == 400 || httpStatus == 415 || httpStatus == 422:
		code = 3 // INVALID_ARGUMENT
	case httpStatus == 401:
		code = 16 // UNAUTHENTICATED
	case httpStatus == 403:
		code = 7 // PERMISSION_DENIED
	case httpStatus == 408 || httpStatus == 504:
		code = 4 // DEADLINE_EXCEEDED
	case httpStatus == 413 || httpStatus == 429:
		code = 8 // RESOURCE_EXHAUSTED
	case httpStatus == 503:
		code = 14 // UNAVAILABLE
	case httpStatus >= 500:
		code = 13 // INTERNAL
	}
	st := &statuspb.Status{Code: code, Message: msg}
	var b []byte
	if enc == JSON {
		b, _ = protojson.Marshal(st)
	} else {
		b, _ = proto.Marshal(st)
	}
	return b
}

// fixJSONIDs undoes protojson's reading of ids. OTLP/JSON writes trace and
// span ids as hex, where protobuf's JSON mapping expects base64; hex
// digits are base64 digits too, so protojson reads a 32-digit hex trace id
// as 24 bytes (a 16-digit span id as 12). Encoding those bytes as base64
// gives the hex text back exactly (no padding at these lengths), which is
// then read as hex. Ids sent as base64 decode to 16 and 8 bytes and stay.
func fixJSONIDs(req *Request) {
	fix := func(b []byte, hexLen int) []byte {
		if len(b) != hexLen*3/4 {
			return b
		}
		out, err := hex.DecodeString(base64.StdEncoding.EncodeToString(b))
		if err != nil {
			return b
		}
		return out
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				fixSpanIDs(sp, fix)
			}
		}
	}
}

func fixSpanIDs(sp *tracepb.Span, fix func([]byte, int) []byte) {
	sp.TraceId = fix(sp.TraceId, 32)
	sp.SpanId = fix(sp.SpanId, 16)
	sp.ParentSpanId = fix(sp.ParentSpanId, 16)
}
