package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/store"
)

// A lease holder cut off from Postgres must stop its job within about one
// check interval, not when the kernel gives up on the socket: its lease
// is about to pass to another replica, and two pull loops or detectors
// must not run at once for long.
func TestLeaseHolderCutOffStopsItsJob(t *testing.T) {
	t.Parallel()
	_, viaProxy, hole := proxiedDatabase(t)
	pool, err := pgxpool.New(context.Background(), viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	running, stopped := make(chan struct{}), make(chan time.Time, 1)
	go runLeased(ctx, st, "cutoff", 200*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), func(jctx context.Context) {
		close(running)
		<-jctx.Done()
		stopped <- time.Now()
	})
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("never took the lease")
	}
	cutAt := time.Now()
	hole.silence()
	select {
	case at := <-stopped:
		if d := at.Sub(cutAt); d > 2*time.Second {
			t.Errorf("job stopped %s after the cut, want within about one check interval", d.Round(time.Millisecond))
		}
	case <-ctx.Done():
		t.Fatal("job still running 30 s after its database was cut off")
	}
}
