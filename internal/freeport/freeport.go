// Package freeport picks loopback ports for servers another process will
// bind (Prometheus, VictoriaMetrics, Postgres, `waterline serve`).
//
// A port the kernel hands out for "127.0.0.1:0" comes from the ephemeral
// range (32768–60999 on Linux), the same range every outgoing connection
// takes its local port from. Between picking such a port and the child
// binding it, any client socket of the busy test process may take it: a
// CI run lost a replay to "bind: address already in use" that way. Ports
// below the ephemeral range are handed to nobody unasked, so a free one
// stays free until a server binds it.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// The range picked from: above the well-known and common service ports,
// below Linux's default ephemeral range.
const (
	low  = 20000
	high = 32768
)

// Addr returns "127.0.0.1:port" for a port that nothing listens on now,
// outside the ephemeral range when one can be found there.
func Addr() (string, error) {
	for range 50 {
		addr := fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(high-low))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr, nil
		}
	}
	// A crowded range: fall back to the kernel's choice.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("freeport: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Port is Addr's port number.
func Port() (int, error) {
	addr, err := Addr()
	if err != nil {
		return 0, err
	}
	_, p, _ := net.SplitHostPort(addr)
	var n int
	_, err = fmt.Sscan(p, &n)
	return n, err
}
