package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// blackhole forwards TCP to target until silenced, then keeps every
// connection open and forwards nothing, as a host cut off from the
// network looks from either side: no FIN, no reset.
type blackhole struct {
	ln     net.Listener
	silent atomic.Bool
}

func newBlackhole(t *testing.T, target string) *blackhole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			pipe := func(dst, src net.Conn) {
				defer conns.Done()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if err != nil {
						dst.Close()
						return
					}
					if b.silent.Load() {
						continue // swallowed
					}
					if _, err := dst.Write(buf[:n]); err != nil {
						return
					}
				}
			}
			conns.Add(2)
			go pipe(up, c)
			go pipe(c, up)
			t.Cleanup(func() { c.Close(); up.Close() })
		}
	}()
	return b
}

// A lease holder cut off from Postgres must stop its job within about one
// check interval, not when the kernel gives up on the socket: its lease
// is about to pass to another replica, and two pull loops or detectors
// must not run at once for long.
func TestLeaseHolderCutOffStopsItsJob(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	hole := newBlackhole(t, u.Host)
	u.Host = hole.ln.Addr().String()
	pool, err := pgxpool.New(context.Background(), u.String())
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
	hole.silent.Store(true)
	select {
	case at := <-stopped:
		if d := at.Sub(cutAt); d > 2*time.Second {
			t.Errorf("job stopped %s after the cut, want within about one check interval", d.Round(time.Millisecond))
		}
	case <-ctx.Done():
		t.Fatal("job still running 30 s after its database was cut off")
	}
}
