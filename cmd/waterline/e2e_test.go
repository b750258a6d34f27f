package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/store/storetest"
)

// envMap turns a map into the env function run takes.
func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// server is a `waterline serve` running in the test process.
type server struct {
	base   string
	token  string
	stderr *syncbuf.Buffer
	stop   func() error // cancels serve and waits for run to return
}

// spikes is GET /api/v1/spikes?q with the server's token: the status
// and the raw body.
func (s *server) spikes(t *testing.T, q url.Values) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+"/api/v1/spikes?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startServe migrates the database at dbURL, creates a write token and
// runs serve on a free port until the test ends (or stop is called).
func startServe(t *testing.T, dbURL string, extraEnv ...string) *server {
	t.Helper()
	env := map[string]string{"DATABASE_URL": dbURL, "WATERLINE_ADDR": "127.0.0.1:0", "WATERLINE_PULL_INTERVAL": "0"}
	for i := 0; i+1 < len(extraEnv); i += 2 {
		env[extraEnv[i]] = extraEnv[i+1]
	}
	ctx := context.Background()
	var tok bytes.Buffer
	if err := run(ctx, []string{"token", "create", "--name", "e2e", "--scope", "write"}, envMap(env), &tok, io.Discard); err != nil {
		t.Fatalf("token create: %v", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(sctx, []string{"serve"}, envMap(env), stdout, stderr) }()
	s := &server{token: strings.TrimSpace(tok.String()), stderr: stderr}
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(60 * time.Second):
				stopErr = fmt.Errorf("serve did not stop within 60s")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = s.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(stdout.String()); m != nil {
			s.base = m[1]
			return s
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not print its address; stderr:\n%s", stderr.String())
	return nil
}

// post sends an NDJSON body (any reader) to path and returns the status and
// the decoded answer, or the transport error.
func (s *server) post(path string, body io.Reader) (int, map[string]any, error) {
	req, err := http.NewRequest("POST", s.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var v map[string]any
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	_ = json.Unmarshal(raw, &v)
	return res.StatusCode, v, nil
}

// answer is what a POST came back with.
type answer struct {
	status int
	v      map[string]any
	err    error
}

// stream POSTs to path a body the test writes, piece by piece, into the
// returned pipe; the answer arrives on the channel once the server has
// answered.
func (s *server) stream(path string) (*io.PipeWriter, <-chan answer) {
	pr, pw := io.Pipe()
	done := make(chan answer, 1)
	go func() {
		st, v, err := s.post(path, pr)
		done <- answer{st, v, err}
	}()
	return pw, done
}

// sampleBase is the time of the first test sample: fixed for the run, so
// the same lines are the same samples.
var sampleBase = time.Now().UTC().Add(-time.Hour).Truncate(time.Second)

// samples returns NDJSON sample lines [from, to) in the last hour.
func samples(from, to int) []byte {
	var b bytes.Buffer
	base := sampleBase
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, `{"request_id":"e2e-%08d","time":%q,"model":"chat-7b","version":"v1","replica":"r-%d","node":"n-1","total_ms":%d,"stages_ms":{"queue":3,"exec":%d},"sample_rate":5}`+"\n",
			i, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i%8, 20+i%300, 10+i%200)
	}
	return b.Bytes()
}

func countSamples(t *testing.T, dbURL string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM samples`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	s := startServe(t, db)
	for _, p := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(s.base + p)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, res, err)
		}
		res.Body.Close()
	}
	st, v, err := s.post("/api/v1/samples", bytes.NewReader(samples(0, 5000)))
	if err != nil || st != 200 || v["accepted"] != float64(5000) {
		t.Fatalf("ingest: %d %v %v", st, v, err)
	}
	st, v, err = s.post("/api/v1/samples", bytes.NewReader(samples(0, 5000)))
	if err != nil || st != 200 || v["duplicates"] != float64(5000) {
		t.Fatalf("retry: %d %v %v", st, v, err)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("serve returned %v on shutdown", err)
	}
	if n := countSamples(t, db); n != 5000 {
		t.Fatalf("%d samples stored, want 5000", n)
	}
	// Structured request logs carry the request id.
	if logs := s.stderr.String(); !regexp.MustCompile(`msg=http request_id=[0-9a-f]+ method=POST path=/api/v1/samples status=200`).MatchString(logs) {
		t.Fatalf("no request log line with a request id:\n%s", logs)
	}
}

// TestShutdownFinishesInFlightIngest stops the server while a request's
// body is still arriving: the request must complete and be stored.
func TestShutdownFinishesInFlightIngest(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	s := startServe(t, db)
	const n = 20000
	body := samples(0, n)
	pw, resc := s.stream("/api/v1/samples")
	half := bytes.LastIndexByte(body[:len(body)/2], '\n') + 1
	if _, err := pw.Write(body[:half]); err != nil {
		r := <-resc
		t.Fatalf("writing the first half: %v; answer %d %v %v", err, r.status, r.v, r.err)
	}
	// Only a request the server has begun to handle is in flight: wait for
	// its COPY to show in Postgres.
	waitForCopy(t, db)
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	// Shutdown closes the listener first: new connections are refused
	// while the request above is still in flight.
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := http.Get(s.base + "/healthz")
		if err != nil {
			break
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("new requests still accepted 10s after shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := pw.Write(body[half:]); err != nil {
		r := <-resc
		t.Fatalf("writing the second half: %v; answer %d %v %v\n%s", err, r.status, r.v, r.err, s.stderr.String())
	}
	pw.Close()
	r := <-resc
	if r.err != nil || r.status != 200 || r.v["accepted"] != float64(n) {
		t.Fatalf("in-flight ingest during shutdown: %d %v %v", r.status, r.v, r.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	if got := countSamples(t, db); got != n {
		t.Fatalf("%d samples stored, want %d", got, n)
	}
}

// waitForCopy waits until a COPY into the database at dbURL is running.
func waitForCopy(t *testing.T, dbURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'copy%' AND state = 'active'`).Scan(&n)
		if err != nil {
			t.Fatalf("waiting for the ingest's COPY: %v", err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
