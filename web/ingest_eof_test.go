package web_test

import (
	"testing"
	"time"
)

// TestIngestRetryOfJSONArray posts the same samples and events twice as a
// JSON array: the retry must answer 200 with everything as duplicates
// (the store reads the stream on after the end when it falls back to its
// duplicate-aware insert).
func TestIngestRetryOfJSONArray(t *testing.T) {
	e := newAPIEnv(t)
	for _, c := range []struct{ path, body string }{
		{"/api/v1/samples", "[" + sampleLine(1) + "," + sampleLine(2) + "]"},
		{"/api/v1/events", `[{"id":"d-1","kind":"deploy","time":"` + testNow.Add(-2*time.Hour).Format(time.RFC3339) + `","model":"chat-7b"}]`},
	} {
		if a, d := accepted(t, e.post(c.path, "application/json", []byte(c.body))); a == 0 || d != 0 {
			t.Fatalf("%s first: accepted %d duplicates %d", c.path, a, d)
		}
		if a, d := accepted(t, e.post(c.path, "application/json", []byte(c.body))); a != 0 || d == 0 {
			t.Fatalf("%s retry: accepted %d duplicates %d, want all duplicates", c.path, a, d)
		}
	}
}
