package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/web"
)

// stuckReader opens a connection that asks for path and never reads the
// answer, with a receive window as small as the kernel allows and a
// WAN-sized MSS (on loopback the MSS is 64 KiB, so the server's send
// buffer would swallow a whole page).
func stuckReader(t *testing.T, addr, path, hdr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1)
			if serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: waterline.test\r\n%s\r\n", path, hdr); err != nil {
		t.Fatal(err)
	}
	return c
}

// Anyone holding a share link (posted in a channel, forwarded to a
// vendor) can pin every heavy-read slot for as long as they like: the
// slot is held while the answer is written, and nothing bounds a write
// to a client that does not read. Incident pages, explore, spikes and the
// timeline then answer 503 for everyone.
func TestSlowReaderCannotPinHeavyReads(t *testing.T) {
	e := newUIEnv(t, func(c *web.Config) { c.HeavyReads = 2 })
	share := e.sharePath(t)
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	for range 4 { // no Accept-Encoding: the raw page
		stuckReader(t, addr, share, "")
	}
	// Past the 5 s grace and the time a reader at 16 KiB/s needs.
	time.Sleep(10 * time.Second)
	start := time.Now()
	r := e.get(fmt.Sprintf("/api/v1/timeline?from=%s&to=%s", e.from.Format(time.RFC3339), e.to.Format(time.RFC3339)), nil)
	if r.status != http.StatusOK {
		t.Errorf("GET /api/v1/timeline with the read token, while a share-link holder does not read its answers: %d after %s: %s",
			r.status, time.Since(start).Round(time.Second), r.body)
	}
}

// Paced answers leave a write deadline on the connection; the next request
// on it (kept alive, idle past the grace) must still get its answer, a
// redirect with no body included. (net/http clears the deadline after
// each request; this guards that the pacing keeps relying on it safely.)
func TestPacedAnswersKeepKeptAliveConnectionsWorking(t *testing.T) {
	e := newAPIEnv(t, func(c *web.Config) { c.BodyGrace = 200 * time.Millisecond })
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) int {
		t.Helper()
		res, err := c.Get(e.srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	conns := 0
	trace := func(path string) {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		req = req.WithContext(httptraceCtx(t, &conns))
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s on a kept-alive connection idle past the grace: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			t.Errorf("GET %s: %d, want 303", path, res.StatusCode)
		}
	}
	if s := get("/healthz"); s != http.StatusOK {
		t.Fatalf("healthz: %d", s)
	}
	time.Sleep(time.Second)
	trace("/") // no session: 303 to /login, headers only
	if conns != 0 {
		t.Errorf("the redirect did not reuse the kept-alive connection (%d new)", conns)
	}
}

func httptraceCtx(t *testing.T, newConns *int) context.Context {
	return httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			*newConns++
		}
	}})
}
