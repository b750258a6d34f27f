package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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
		f = keyPath(raw, strings.TrimSuffix(f, `"`))
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Field: f, Msg: "unknown field " + f}
	}
	if !strings.HasPrefix(raw2str(raw), "{") {
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Msg: "want a JSON object"}
	}
	return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Msg: strings.TrimPrefix(err.Error(), "json: ")}
}

// keyPath is where the object key name first stands in raw, as a field
// path ("scope.mdl", "alerts[1].labelz"): encoding/json names an unknown
// field without the objects around it. name itself when not found.
func keyPath(raw []byte, name string) string {
	type frame struct {
		array   bool
		index   int    // values read, in an array
		key     string // the last key read, in an object
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var (
		stack []frame
		names []string // where each open container stands in its parent
	)
	// value notes one value read in the innermost container and returns
	// where it stands.
	value := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := &stack[len(stack)-1]
		if f.array {
			f.index++
			return fmt.Sprintf("[%d]", f.index-1)
		}
		f.wantKey = true
		return f.key
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return name
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				names = append(names, value())
				stack = append(stack, frame{array: d == '[', wantKey: d == '{'})
			default:
				stack, names = stack[:len(stack)-1], names[:len(names)-1]
			}
			continue
		}
		if f := len(stack) - 1; f >= 0 && !stack[f].array && stack[f].wantKey {
			key, _ := tok.(string)
			if key == name && !inFreeForm(names) {
				var b strings.Builder
				for _, n := range append(names[1:], key) {
					if b.Len() > 0 && !strings.HasPrefix(n, "[") {
						b.WriteByte('.')
					}
					b.WriteString(n)
				}
				return b.String()
			}
			stack[f].key, stack[f].wantKey = key, false
			continue
		}
		value()
	}
}

// freeForm are the fields that hold maps of any keys (event attrs, alert
// labels and annotations): a key in them is never an unknown field.
var freeForm = map[string]bool{"attrs": true, "labels": true, "annotations": true,
	"groupLabels": true, "commonLabels": true, "commonAnnotations": true}

// inFreeForm reports whether a container path passes through a free-form
// map.
func inFreeForm(names []string) bool {
	for _, n := range names {
		if freeForm[n] {
			return true
		}
	}
	return false
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
		return ReadFailed(err, "reading the request body failed")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return request.BadInput("", "empty body: send %s", hint)
	}
	return DecodeRecord(raw, 0, v)
}

// ReadFailed is the answer to a body whose reading failed: 408 when it
// stalled past the request's pace or time limit (the network's fault: the
// sender may retry), else 400 (the client's connection failed).
func ReadFailed(err error, what string) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &request.Error{Status: http.StatusRequestTimeout, Msg: "the request body did not arrive within the request time limit"}
	}
	return request.BadInput("", "%s: %v", what, err)
}
