package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestAddrIsFreeAndOutsideTheEphemeralRange(t *testing.T) {
	for range 20 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		if n < low || n >= high {
			t.Fatalf("port %d outside [%d, %d)", n, low, high)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		ln.Close()
	}
	if p, err := Port(); err != nil || p < low || p >= high {
		t.Fatalf("Port() = %d, %v", p, err)
	}
}
