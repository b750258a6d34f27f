package store_test

import (
	"context"
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

// TestWatchAuthNoticesASilentlyDeadPath: the revocation listener hears a
// revocation, and when its path to Postgres dies without a word (a
// partition: no RST, no FIN), it stops claiming to listen within its
// heartbeat — the caches must not go on serving while revocations are
// unheard — and listens again once the database is reachable.
func TestWatchAuthNoticesASilentlyDeadPath(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFreezingProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = proxy.addr
	cfg, err := pgxpool.ParseConfig(viaProxy.String())
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	dpool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer dpool.Close()
	other := store.New(dpool) // the CLI or another replica, on a healthy path

	var on atomic.Bool
	states := make(chan bool, 16)
	heard := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = store.New(pool).WatchAuth(ctx, 100*time.Millisecond, time.Second,
			func(b bool) { on.Store(b); states <- b }, func() { heard <- struct{}{} })
	}()
	defer func() { cancel(); <-done }()
	wait := func(want bool, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case b := <-states:
				if b == want {
					return
				}
			case <-deadline:
				t.Fatalf("listening(%v) not called within %s", want, within)
			}
		}
	}
	wait(true, 10*time.Second)

	// Quiet for a few heartbeats: pings keep it listening.
	time.Sleep(2500 * time.Millisecond)
	if !on.Load() {
		t.Fatal("a quiet, healthy listener stopped listening")
	}
	_, tok, err := other.CreateToken(ctx, "x", store.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.RevokeToken(ctx, tok.ID, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("a revocation was not heard")
	}

	proxy.freeze()
	wait(false, 6*time.Second) // within a heartbeat and a ping's deadline
	proxy.thaw()
	wait(true, 10*time.Second)
}

// freezingProxy forwards TCP connections to a backend until frozen: then
// the connections it holds stop carrying bytes, without being closed, as
// over a partitioned network. New connections after thaw work again.
type freezingProxy struct {
	addr   string
	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
}

func newFreezingProxy(t *testing.T, backend string) *freezingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{addr: ln.Addr().String()}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go p.pipe(c, b)
			go p.pipe(b, c)
		}
	}()
	return p
}

// pipe copies src to dst, dropping bytes while frozen (and for good, for
// a connection that was frozen once: a partition loses what is in flight).
func (p *freezingProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	dead := false
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			dead = dead || p.frozen
			p.mu.Unlock()
			if !dead {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if !dead { // a partition closes nothing
				dst.Close()
			}
			return
		}
	}
}

func (p *freezingProxy) freeze() { p.mu.Lock(); p.frozen = true; p.mu.Unlock() }
func (p *freezingProxy) thaw()   { p.mu.Lock(); p.frozen = false; p.mu.Unlock() }
