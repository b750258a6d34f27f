package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/wire"
)

// TestCreateIncidentIdempotencyKey: a ticketing integration that retries
// POST /api/v1/incidents with the same Idempotency-Key gets the incident
// its first request opened, even when the retries race; the same key for
// another incident is a 422 naming the header.
func TestCreateIncidentIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	body := func(title string) []byte {
		return []byte(fmt.Sprintf(`{"title":%q,"start":%q,"scope":{"model":"chat-7b"}}`,
			title, testNow.Add(-30*time.Minute).Format(time.RFC3339)))
	}
	create := func(key string, b []byte) response {
		h := http.Header{}
		if key != "" {
			h.Set("Idempotency-Key", key)
		}
		return e.do(request{method: "POST", path: "/api/v1/incidents", token: e.write, ctype: "application/json", body: b, header: h})
	}
	id := func(r response) int64 {
		t.Helper()
		var in wire.Incident
		if err := json.Unmarshal(r.body, &in); err != nil || in.ID == 0 {
			t.Fatalf("%d %s: %v", r.status, r.body, err)
		}
		return in.ID
	}

	// Eight racing retries of one request: one incident, one 201.
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []response
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := create("ticket-4711", body("P99 on chat-7b"))
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	created, first := 0, int64(0)
	for _, r := range got {
		switch r.status {
		case http.StatusCreated:
			created++
		case http.StatusOK:
			if r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("a replayed answer without Idempotent-Replayed: %v", r.header)
			}
		default:
			t.Fatalf("racing retry: %d %s", r.status, r.body)
		}
		if first == 0 {
			first = id(r)
		} else if id(r) != first {
			t.Fatalf("retries answered incidents %d and %d", first, id(r))
		}
	}
	if created != 1 {
		t.Errorf("%d answers said created, want 1", created)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 1 {
		t.Fatalf("%d incidents after 8 retries of one request, want 1", n)
	}

	// The key for another incident: refused, nothing stored.
	r := create("ticket-4711", body("another incident"))
	if r.status != http.StatusUnprocessableEntity || r.err.Field != "Idempotency-Key" || !strings.Contains(r.err.Error, fmt.Sprint(first)) {
		t.Errorf("key reused for another body: %d %+v", r.status, r.err)
	}
	// Without a key, or with another, each request is its own incident.
	if a, b := id(create("", body("x"))), id(create("", body("x"))); a == b {
		t.Errorf("two keyless creations answered one incident %d", a)
	}
	if r := create("ticket-4712", body("P99 on chat-7b")); r.status != http.StatusCreated || id(r) == first {
		t.Errorf("a new key: %d %s", r.status, r.body)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 4 {
		t.Errorf("%d incidents, want 4", n)
	}
	// A key that is no key is a 400 naming the header.
	if r := create(strings.Repeat("k", 256), body("y")); r.status != http.StatusBadRequest || r.err.Field != "Idempotency-Key" {
		t.Errorf("256-character key: %d %+v", r.status, r.err)
	}
}
