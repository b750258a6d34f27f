package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// DecodeRecord decodes one record into v, rejecting unknown fields, and
// turns decoding errors into a request.Error naming the line and field
// (line 0 for a body that is one object).
func DecodeRecord(raw []byte, line int, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil {
		// Only white space may follow (More is false before a stray
		// closing bracket, which then passed).
		if len(bytes.TrimSpace(raw[d.InputOffset():])) > 0 {
			return &request.Error{Status: http.StatusBadRequest, Line: line, Msg: "text after the JSON value; one value per line"}
		}
		return nil
	}
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		fe *wire.FieldError
	)
	switch {
	case errors.As(err, &fe):
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Field: fe.Field, Msg: fe.Msg}
	case errors.As(err, &se):
		return &request.Error{Status: http.StatusBadRequest, Line: line, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &request.Error{Status: http.StatusBadRequest, Line: line, Msg: "invalid JSON: the record is truncated"}
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
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Field: te.Field,
			Msg: fmt.Sprintf("want %s, got %s", want, te.Value)}
	}
	if f, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		f = strings.TrimSuffix(f, `"`)
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Field: f, Msg: "unknown field " + f}
	}
	if !strings.HasPrefix(raw2str(raw), "{") {
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Msg: "want a JSON object"}
	}
	return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Msg: strings.TrimPrefix(err.Error(), "json: ")}
}

func raw2str(b []byte) string { return string(bytes.TrimSpace(b[:min(len(b), 1)])) }

// ReadObject reads a body that is one JSON object of at most max bytes
// into v, strictly (DecodeRecord); hint says what to send when the body
// is empty.
func ReadObject(w http.ResponseWriter, r *http.Request, max int64, v any, hint string) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var me *http.MaxBytesError
		if errors.As(err, &me) {
			return &request.Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body larger than %d bytes", max)}
		}
		return request.BadInput("", "reading the request body failed: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return request.BadInput("", "empty body: send %s", hint)
	}
	return DecodeRecord(raw, 0, v)
}
