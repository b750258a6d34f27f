package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/web"
)

// TestSamplesUnderRetentionFloorRefused: a sample older than what the
// samples retention keeps is refused with a 422 naming its line and
// field, and nothing of the request is stored — accepting it would have
// told the sender it was stored until the next maintenance dropped it.
func TestSamplesUnderRetentionFloorRefused(t *testing.T) {
	t.Parallel()
	floor := testNow.Add(-2 * time.Hour).Add(2500 * time.Millisecond) // between sampleLine(2499) and (2500)
	e := newAPIEnv(t, func(c *web.Config) { c.SamplesFloor = func() time.Time { return floor } })
	post := func(body []byte) response {
		return e.do(request{method: "POST", path: "/api/v1/samples", token: e.write, ctype: "application/x-ndjson", body: body})
	}
	// Lines 1–3 are samples 2500–2502 (kept); line 4 is sample 2000 (under the floor).
	body := append(ndjson(2500, 2503), []byte(sampleLine(2000)+"\n")...)
	r := post(body)
	if r.status != http.StatusUnprocessableEntity || r.err.Line != 4 || r.err.Field != "time" ||
		!strings.Contains(r.err.Error, "samples retention") {
		t.Fatalf("a sample under the floor: %d %+v, want 422 on line 4, field time, naming the retention", r.status, r.err)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 0 {
		t.Fatalf("%d samples stored from a refused request, want 0", n)
	}
	if r := post(ndjson(2500, 2503)); r.status != http.StatusOK {
		t.Fatalf("samples above the floor: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 3 {
		t.Fatalf("%d samples stored, want 3", n)
	}
}
