package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/demo/pgtmp"
)

// TestPostgresRestartDuringIngest crashes and restarts Postgres (a private
// cluster: the machine's shared one is left alone) while a large ingest
// request is streaming into COPY. The client must not get a 200 for data
// that is not stored, and retrying must store everything exactly once.
func TestPostgresRestartDuringIngest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg := privatePostgres(ctx, t)
	s := startServe(t, pg.URL())

	const n = 60000
	body := samples(0, n)
	pw, resc := s.stream("/api/v1/samples")
	third := bytes.LastIndexByte(body[:len(body)/3], '\n') + 1
	if _, err := pw.Write(body[:third]); err != nil {
		t.Fatal(err)
	}
	waitForCopy(t, pg.URL())
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The rest of the body: the server may already have given up on it.
	_, _ = pw.Write(body[third:])
	pw.Close()
	r := <-resc
	switch {
	case r.err != nil:
		t.Logf("first attempt: dropped connection (%v)", r.err)
	case r.status == 503:
		t.Logf("first attempt: %d %v", r.status, r.v)
	default:
		t.Fatalf("first attempt answered %d %v across a Postgres restart; want 503 or a dropped connection\n%s", r.status, r.v, s.stderr.String())
	}
	if got := countSamples(t, pg.URL()); got != 0 {
		t.Fatalf("%d samples stored by the failed request, want 0 (all-or-nothing)", got)
	}

	// The client retries until it gets an answer; the pool reconnects.
	total := 0.0
	for attempt := 0; ; attempt++ {
		st, v, err := s.post("/api/v1/samples", bytes.NewReader(body))
		if err == nil && st == 200 {
			total += v["accepted"].(float64)
			break
		}
		if attempt == 20 {
			t.Fatalf("retry still failing: %d %v %v", st, v, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if total != n {
		t.Fatalf("retries accepted %v samples, want %d", total, n)
	}
	if got := countSamples(t, pg.URL()); got != n {
		t.Fatalf("%d samples stored, want exactly %d", got, n)
	}
	// And once more: nothing new.
	st, v, err := s.post("/api/v1/samples", bytes.NewReader(body))
	if err != nil || st != 200 || v["duplicates"] != float64(n) {
		t.Fatalf("final retry: %d %v %v", st, v, err)
	}
}

// privatePostgres starts a throwaway cluster of the test's own, which it
// may crash and restart (the machine's shared one is left alone); it stops
// when the test ends.
func privatePostgres(ctx context.Context, t *testing.T) *pgtmp.Cluster {
	t.Helper()
	pg, err := pgtmp.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	return pg
}
