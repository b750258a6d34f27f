package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/web"
)

// A body read to its end does not keep the connection's read deadline:
// past it, net/http's background read on the connection failed and
// cancelled the request, so a database stall longer than the body's
// grace (a lock, a failover) answered a small ingest "499" and stored
// nothing, where the README promises 503 or the answer once it clears.
func TestDatabaseStallAfterTheBodyIsNoClientGone(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.BodyGrace = 300 * time.Millisecond })
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond) // five times the body grace
		_ = tx.Rollback(ctx)
	}()
	line := fmt.Sprintf(`{"id":"stall-1","kind":"deploy","time":%q,"model":"chat","version":"v2","summary":"deploy"}`, testNow.Add(-time.Minute).Format(time.RFC3339))
	r := e.post("/api/v1/events", "application/x-ndjson", []byte(line))
	if r.status != http.StatusOK {
		t.Fatalf("event posted during a 1.5 s lock: %d %s", r.status, r.body)
	}
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE id = 'stall-1'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("stored %d (%v)", n, err)
	}
}
