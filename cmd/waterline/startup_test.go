package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/store/storetest"
)

// hungPrometheus accepts connections and never answers.
func hungPrometheus(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return "http://" + ln.Addr().String()
}

// A Prometheus that takes connections and never answers held serve from
// listening (and from its signals) for two and a half minutes: its
// start-up questions are bounded, and ingest, which needs no Prometheus,
// is served.
func TestServeStartsWithAHungPrometheus(t *testing.T) {
	start := time.Now()
	s := startServe(t, storetest.NewDatabase(t), "PROMETHEUS_URL", hungPrometheus(t))
	if d := time.Since(start); d > startupChecks+10*time.Second {
		t.Errorf("serve listened %s after start", d.Round(time.Second))
	}
	res, err := http.Get(s.base + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
}

// A signal during the start-up questions stops serve at once.
func TestServeStopsOnASignalDuringStartUp(t *testing.T) {
	env := map[string]string{"DATABASE_URL": storetest.NewDatabase(t), "WATERLINE_ADDR": "127.0.0.1:0", "PROMETHEUS_URL": hungPrometheus(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr syncbuf.Buffer
	go func() { done <- run(ctx, []string{"serve"}, envMap(env), io.Discard, &stderr) }()
	time.Sleep(1500 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("serve did not stop within 5 s of the signal:\n%s", stderr.String())
	}
}

// A request still running when the drain ends (an upload without a
// request time limit) has its connection closed, and serve exits cleanly
// after storing what it holds: it returned "shutdown: context deadline
// exceeded" (exit 1 after a clean drain) and skipped the trace flush.
func TestServeDrainThatRunsOverExitsCleanly(t *testing.T) {
	t.Parallel()
	s := startServe(t, storetest.NewDatabase(t), "WATERLINE_REQUEST_TIMEOUT", "0")
	pr, pw := io.Pipe()
	go func() {
		// 32 KiB/s, above the minimum pace, for a minute: longer than the drain.
		line := []byte(`{"time":"2026-01-01T00:00:00Z","model":"m","total_ms":1}` + "\n")
		chunk := bytes.Repeat(line, 32<<10/len(line))
		for i := 0; i < 60; i++ {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
		pw.Close()
	}()
	go func() { _, _, _ = s.post("/api/v1/samples", pr) }()
	time.Sleep(2 * time.Second)
	start := time.Now()
	if err := s.stop(); err != nil {
		t.Errorf("serve after a drain that ran over: %v", err)
	}
	if d := time.Since(start); d > drainTimeout(0)+10*time.Second {
		t.Errorf("serve stopped %s after the signal", d.Round(time.Second))
	}
	pr.Close()
}
