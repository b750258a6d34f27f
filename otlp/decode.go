// Package otlp turns OpenTelemetry traces into Waterline's request
// samples: it decodes OTLP export requests (protobuf or JSON), maps spans
// onto stages and attributes onto dimensions (Config), and assembles the
// spans of each trace — which may arrive in several requests, children
// before parents — in a bounded buffer until the trace can become one
// sample (Assembler).
//
// Protobuf requests are read by a decoder of its own (wire.go) that
// walks the wire format once and keeps the fields Waterline maps, as
// views into one copy of the body: decoding with the Collector's pdata
// built every span, attribute and value as its own struct and was half
// of the receiver's cost (BenchmarkDecode). OTLP/JSON, as the spec writes
// it (hex ids, enums by number or name, 64-bit integers as strings), is
// read with pdata's JSON decoder and handed on as protobuf: one mapping
// path for both.
//
// It knows no HTTP and no database: web/ingest hands it the body and
// web/api its answer; the samples go to a Sink (the store).
package otlp

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
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

// Decode parses an export request. An id of the wrong length fails the
// whole request, as in the Collector's receiver: it is not OTLP. The
// request holds its own copy of body.
func Decode(body []byte, enc Encoding) (Request, error) {
	if enc == JSON {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalJSON(body); err != nil {
			return Request{}, fmt.Errorf("not an OTLP/JSON ExportTraceServiceRequest: %v", err)
		}
		pb, err := req.MarshalProto()
		if err != nil {
			return Request{}, fmt.Errorf("not an OTLP/JSON ExportTraceServiceRequest: %v", err)
		}
		body = pb
	}
	d := decodedPool.Get().(*decoded)
	if err := d.decodeProto(body); err != nil {
		release(Request{d})
		if enc == JSON { // pdata read it: what is left is the decoded size
			return Request{}, fmt.Errorf("OTLP/JSON ExportTraceServiceRequest refused: %w", err)
		}
		return Request{}, fmt.Errorf("not an OTLP/protobuf ExportTraceServiceRequest: %w", err)
	}
	return Request{d}, nil
}

// EncodeResponse renders the answer to an accepted request in its
// encoding: an ExportTraceServiceResponse, whose partial_success counts
// the rejected spans and says why when there are any.
func EncodeResponse(rejected int, message string, enc Encoding) ([]byte, error) {
	if rejected == 0 {
		// A full success leaves partial_success unset (the spec's MUST):
		// the empty message, which pdata would write with an empty
		// partial_success in it.
		if enc == JSON {
			return []byte("{}"), nil
		}
		return []byte{}, nil
	}
	res := ptraceotlp.NewExportResponse()
	res.PartialSuccess().SetRejectedSpans(int64(rejected))
	res.PartialSuccess().SetErrorMessage(message)
	if enc == JSON {
		return res.MarshalJSON()
	}
	return res.MarshalProto()
}

// ContentType is the media type of an encoding, for an answer in the
// request's own encoding.
func ContentType(enc Encoding) string {
	if enc == JSON {
		return "application/json"
	}
	return "application/x-protobuf"
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
