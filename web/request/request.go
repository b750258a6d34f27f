// Package request reads what clients send, the same way for the JSON API
// and the pages: an Error that keeps the HTTP status, the line and the
// field it is about (web's error handler answers it as such), and typed
// query and path parameters that fail with one. It knows no router.
package request

import (
	"fmt"
	"net/http"
	"strings"
)

// Error is a problem with the request's content: which line (1-based, 0
// when not line-oriented) and which field, and the HTTP status to answer.
type Error struct {
	Status int
	Line   int
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Field != "":
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	case e.Field != "":
		return fmt.Sprintf("%s: %s", e.Field, e.Msg)
	}
	return e.Msg
}

// BadInput is a 400: the request is malformed.
func BadInput(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Invalid is a 422: the request is well-formed, a value is not acceptable.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// MaxLabelLen bounds ids and dimension values: they are labels, not text.
const MaxLabelLen = 256

// CheckText returns what is wrong with a text value ("" when nothing).
// Postgres text cannot hold NUL, which JSON can ("\u0000").
func CheckText(v string, max int) string {
	if len(v) > max {
		return fmt.Sprintf("longer than %d bytes", max)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}
