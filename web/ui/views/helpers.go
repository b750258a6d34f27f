package views

import (
	"github.com/waterline-dev/waterline/correlate"
	"strconv"
	"strings"
)

func itoa(i int) string { return strconv.Itoa(i) }

// csrfHeaders is the hx-headers value that makes every htmx request carry
// the session's CSRF token.
func csrfHeaders(token string) string {
	if token == "" {
		return ""
	}
	return `{"X-CSRF-Token": "` + strings.NewReplacer(`"`, "", `\`, "").Replace(token) + `"}`
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }

func join(s []string) string { return strings.Join(s, ", ") }

func stageNames() []string { return correlate.StageNames() }

func arrow(sort string) string {
	switch sort {
	case "descending":
		return " ↓"
	case "ascending":
		return " ↑"
	}
	return ""
}

func segTitle(segs []Segment) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.Title
	}
	return strings.Join(parts, ", ")
}

// sampleExample shows how to send samples, in the empty sample table.
const sampleExample = `curl -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/x-ndjson" \
  --data-binary @samples.ndjson $WATERLINE/api/v1/samples

{"request_id":"r-1","time":"2026-10-06T08:01:02Z","model":"chat-7b","version":"v2","tenant":"t-1",
 "replica":"chat-7b-5c9d-x2","node":"gpu-node-03","batch_size":4,"total_ms":812,
 "stages_ms":{"gateway":3,"queue":420,"batch_wait":35,"exec":340,"postprocess":4},"sample_rate":20}`

// plural is one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// failedReason is " (why)" after "failed", or nothing when the reason is
// not known (the status poll does not read it).
func failedReason(err string) string {
	if err == "" {
		return ""
	}
	return " (" + err + ")"
}
