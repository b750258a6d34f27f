package main

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/waterline-dev/waterline/store/storetest"
)

// cutProxy forwards TCP to target and cuts it as a network does, with no
// FIN and no reset: silence() swallows everything on every connection,
// open or new, as a host cut off from the network looks from either side;
// freeze() stops dead only the connections open at that moment, as a
// failed-over or NAT-dropped server's old sessions look, while new ones go
// through (to the server that took over).
type cutProxy struct {
	ln     net.Listener
	silent atomic.Bool
	mu     sync.Mutex
	open   []*atomic.Bool // one frozen flag per connection not yet frozen
}

// proxiedDatabase creates a test database and returns its URL, the same
// through a cutProxy in front of Postgres, and the proxy.
func proxiedDatabase(t *testing.T) (direct, proxied string, p *cutProxy) {
	t.Helper()
	direct = storetest.NewDatabase(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	p = newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	return direct, u.String(), p
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	var (
		allMu sync.Mutex
		all   []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		allMu.Lock()
		for _, c := range all {
			c.Close()
		}
		allMu.Unlock()
	})
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
			allMu.Lock()
			all = append(all, c, up)
			allMu.Unlock()
			frozen := new(atomic.Bool)
			p.mu.Lock()
			p.open = append(p.open, frozen)
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if frozen.Load() {
						return // swallowed, and no close passed on
					}
					if err != nil {
						dst.Close()
						return
					}
					if p.silent.Load() {
						continue // swallowed
					}
					if _, err := dst.Write(buf[:n]); err != nil {
						return
					}
				}
			}
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return p
}

// silence swallows everything from now on, on every connection.
func (p *cutProxy) silence() { p.silent.Store(true) }

// freeze stops the connections open now; later ones go through.
func (p *cutProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.open {
		f.Store(true)
	}
	p.open = nil
}
