package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web"
)

func TestSamplesIngestAndReadBack(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	a, d := accepted(t, e.post("/api/v1/samples", "application/x-ndjson", ndjson(0, 300)))
	if a != 300 || d != 0 {
		t.Fatalf("accepted %d duplicates %d, want 300 0", a, d)
	}
	// The same framing as a JSON array, gzip-compressed: new ids.
	var arr bytes.Buffer
	arr.WriteString("[\n")
	for i := 300; i < 400; i++ {
		if i > 300 {
			arr.WriteString(",\n")
		}
		arr.WriteString(sampleLine(i))
	}
	arr.WriteString("\n]\n")
	r := e.do(request{method: "POST", path: "/api/v1/samples", token: e.write, ctype: "application/json", encoding: "gzip", body: gz(t, arr.Bytes())})
	if a, d := accepted(t, r); a != 100 || d != 0 {
		t.Fatalf("array+gzip: accepted %d duplicates %d, want 100 0", a, d)
	}
	// application/json holding NDJSON works too.
	if a, _ := accepted(t, e.post("/api/v1/samples", "application/json; charset=utf-8", ndjson(400, 410))); a != 10 {
		t.Fatalf("NDJSON as application/json: accepted %d, want 10", a)
	}

	got, err := e.st.Samples(context.Background(), store.SampleFilter{
		From: testNow.Add(-3 * time.Hour), To: testNow, Scope: correlate.Scope{Model: "chat-7b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 410 {
		t.Fatalf("read back %d samples, want 410", len(got))
	}
	s := got[7]
	want := correlate.Sample{RequestID: "req-0000007", Time: testNow.Add(-2*time.Hour + 7*time.Millisecond), Model: "chat-7b",
		Version: "v1", Tenant: "t-a", Replica: "chat-7b-0", Node: "gpu-1", Entry: "/v1/chat", BatchSize: 4, Status: "ok",
		TotalMs: 37.5, SampleRate: 10}
	if s.RequestID != want.RequestID || !s.Time.Equal(want.Time) || s.Model != want.Model || s.Version != want.Version ||
		s.Tenant != want.Tenant || s.Replica != want.Replica || s.Node != want.Node || s.Entry != want.Entry ||
		s.BatchSize != want.BatchSize || s.Status != want.Status || s.TotalMs != want.TotalMs || s.SampleRate != want.SampleRate {
		t.Fatalf("sample 7 = %+v, want %+v", s, want)
	}
	if s.StagesMs[correlate.StageGateway] != 1 || s.StagesMs[correlate.StageQueue] != 7 || s.StagesMs[correlate.StageExec] != 20.25 {
		t.Fatalf("stages = %v", s.StagesMs)
	}
	if !math.IsNaN(s.StagesMs[correlate.StageAuth]) || !math.IsNaN(s.StagesMs[correlate.StageDownstream]) {
		t.Fatalf("unreported stages should read back as NaN: %v", s.StagesMs)
	}
}

func TestSamplesDefaultsAndNulls(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	tm := testNow.Add(-time.Minute).Format(time.RFC3339)
	body := fmt.Sprintf(`{"request_id":"r1","time":%q,"model":"m","total_ms":0,"stages_ms":{"exec":null}}
{"request_id":"r2","time":%q,"model":"m","total_ms":1,"stages_ms":null}
`, tm, tm)
	if a, _ := accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(body))); a != 2 {
		t.Fatalf("accepted %d", a)
	}
	if n := e.count(`SELECT count(*) FROM samples WHERE sample_rate = 1 AND exec_ms IS NULL AND gateway_ms IS NULL`); n != 2 {
		t.Fatalf("%d samples with default sample_rate 1 and NULL stages, want 2", n)
	}
}

func TestSamplesBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, func(c *web.Config) { c.IngestMaxLines = 50; c.IngestMaxBytes = 64 << 10 })
	good := strings.TrimSpace(string(ndjson(0, 3)))
	line := func(i int, edit func(string) string) string {
		lines := strings.Split(good, "\n")
		lines[i] = edit(lines[i])
		return strings.Join(lines, "\n") + "\n"
	}
	replace := func(old, new string) func(string) string {
		return func(s string) string {
			if !strings.Contains(s, old) {
				panic("test edit does not apply: " + old)
			}
			return strings.Replace(s, old, new, 1)
		}
	}
	old := testNow.Add(-400 * 24 * time.Hour).Format(time.RFC3339)
	future := testNow.Add(2 * time.Hour).Format(time.RFC3339)
	cur := testNow.Add(-2*time.Hour + time.Millisecond).Format(time.RFC3339Nano)
	// 64 KiB limit: 49 padded lines exceed it; the error names the line
	// that crosses it.
	pad := strings.Repeat(" ", 2000)
	var big bytes.Buffer
	bigLine := 0
	for i := 0; i < 49; i++ {
		big.WriteString(strings.Replace(sampleLine(i), `{"request_id"`, "{"+pad+`"request_id"`, 1) + "\n")
		if bigLine == 0 && big.Len() > 64<<10 {
			bigLine = i + 1
		}
	}
	// A gzip bomb: 64 KiB of compressed spaces inflates to 64 MiB, far past
	// the decompressed limit; decoding must stop there.
	bomb := gz(t, append(bytes.Repeat([]byte(" "), 64<<20), []byte(sampleLine(0))...))
	cases := []struct {
		name, ctype, encoding string
		body                  []byte
		status, line          int
		field                 string
	}{
		{"truncated JSON", "application/x-ndjson", "", []byte(line(1, func(s string) string { return s[:len(s)/2] })), 400, 2, ""},
		{"truncated array", "application/json", "", []byte("[" + sampleLine(0) + "," + sampleLine(1)[:40]), 400, 2, ""},
		{"not JSON", "application/x-ndjson", "", []byte("hello\n"), 400, 1, ""},
		{"string for a number", "application/x-ndjson", "", []byte(line(2, replace(`"total_ms":32.5`, `"total_ms":"32.5"`))), 422, 3, "total_ms"},
		{"number for a string", "application/x-ndjson", "", []byte(line(0, replace(`"model":"chat-7b"`, `"model":7`))), 422, 1, "model"},
		{"array for an object", "application/x-ndjson", "", []byte(line(1, func(string) string { return "[1,2]" })), 422, 2, ""},
		{"unknown stage", "application/x-ndjson", "", []byte(line(1, replace(`"gateway":1`, `"gatewai":1`))), 422, 2, "stages_ms.gatewai"},
		{"stage not a number", "application/x-ndjson", "", []byte(line(1, replace(`"gateway":1`, `"gateway":"1"`))), 422, 2, "stages_ms.gateway"},
		{"unknown field", "application/x-ndjson", "", []byte(line(0, replace(`"status":"ok"`, `"statuz":"ok"`))), 422, 1, "statuz"},
		{"negative total", "application/x-ndjson", "", []byte(line(2, replace(`"total_ms":32.5`, `"total_ms":-1`))), 422, 3, "total_ms"},
		{"negative stage", "application/x-ndjson", "", []byte(line(2, replace(`"exec":20.25`, `"exec":-0.5`))), 422, 3, "stages_ms.exec"},
		{"negative batch", "application/x-ndjson", "", []byte(line(2, replace(`"batch_size":4`, `"batch_size":-4`))), 422, 3, "batch_size"},
		{"huge number", "application/x-ndjson", "", []byte(line(2, replace(`"total_ms":32.5`, `"total_ms":1e999`))), 422, 3, "total_ms"},
		{"sample_rate below 1", "application/x-ndjson", "", []byte(line(1, replace(`"sample_rate":10`, `"sample_rate":0.5`))), 422, 2, "sample_rate"},
		{"missing request_id", "application/x-ndjson", "", []byte(line(1, replace(`"request_id":"req-0000001",`, ``))), 422, 2, "request_id"},
		{"missing model", "application/x-ndjson", "", []byte(line(1, replace(`"model":"chat-7b",`, ``))), 422, 2, "model"},
		{"missing total", "application/x-ndjson", "", []byte(line(1, replace(`"total_ms":31.5,`, ``))), 422, 2, "total_ms"},
		{"missing time", "application/x-ndjson", "", []byte(line(1, replace(`"time":"`+cur+`",`, ``))), 422, 2, "time"},
		{"not RFC 3339", "application/x-ndjson", "", []byte(line(1, replace(cur, "29/11/2026 10:00"))), 422, 2, "time"},
		{"far in the past", "application/x-ndjson", "", []byte(line(1, replace(cur, old))), 422, 2, "time"},
		{"in the future", "application/x-ndjson", "", []byte(line(1, replace(cur, future))), 422, 2, "time"},
		{"NUL in a label", "application/x-ndjson", "", []byte(line(1, replace(`"tenant":"t-a"`, `"tenant":"t\u0000a"`))), 422, 2, "tenant"},
		{"two records on a line", "application/x-ndjson", "", []byte(sampleLine(0) + sampleLine(1) + "\n"), 400, 1, ""},
		{"data after the array", "application/json", "", []byte("[" + sampleLine(0) + "] {}"), 400, 2, ""},
		{"empty body", "application/x-ndjson", "", nil, 400, 0, ""},
		{"blank body", "application/x-ndjson", "", []byte("\n \n"), 400, 0, ""},
		{"empty array", "application/json", "", []byte("[]"), 400, 0, ""},
		{"wrong content type", "text/csv", "", []byte(good), 415, 0, "Content-Type"},
		{"no content type", "", "", []byte(good), 415, 0, "Content-Type"},
		{"unknown encoding", "application/x-ndjson", "br", []byte(good), 415, 0, "Content-Encoding"},
		{"not gzip", "application/x-ndjson", "gzip", []byte(good), 400, 0, "Content-Encoding"},
		{"too many lines", "application/x-ndjson", "", ndjson(0, 51), 413, 51, ""},
		{"too many elements", "application/json", "", []byte("[" + strings.Repeat(sampleLine(0)+",", 50) + sampleLine(0) + "]"), 413, 51, ""},
		{"oversize body", "application/x-ndjson", "", big.Bytes(), 413, bigLine, ""},
		{"gzip bomb", "application/x-ndjson", "gzip", bomb, 413, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(request{method: "POST", path: "/api/v1/samples", token: e.write, ctype: c.ctype, encoding: c.encoding, body: c.body})
			if r.status != c.status || r.err.Line != c.line || r.err.Field != c.field {
				t.Errorf("got %d line %d field %q (%s), want %d line %d field %q", r.status, r.err.Line, r.err.Field, r.err.Error,
					c.status, c.line, c.field)
			}
			if r.err.Error == "" {
				t.Errorf("no error message")
			}
		})
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 0 {
		t.Fatalf("%d samples stored by rejected requests, want 0", n)
	}
}

func TestSamplesOneBadLineInTenThousand(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	lines := strings.Split(strings.TrimSpace(string(ndjson(0, 10000))), "\n")
	lines[7776] = strings.Replace(lines[7776], `"exec":20.25`, `"exec":-3`, 1)
	r := e.post("/api/v1/samples", "application/x-ndjson", []byte(strings.Join(lines, "\n")))
	if r.status != http.StatusUnprocessableEntity || r.err.Line != 7777 || r.err.Field != "stages_ms.exec" {
		t.Fatalf("got %d %+v, want 422 naming line 7777 stages_ms.exec", r.status, r.err)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 0 {
		t.Fatalf("%d samples stored, want 0 (all-or-nothing)", n)
	}
	// A syntax error late in the request behaves the same.
	lines[7776] = lines[7776][:30]
	r = e.post("/api/v1/samples", "application/x-ndjson", []byte(strings.Join(lines, "\n")))
	if r.status != http.StatusBadRequest || r.err.Line != 7777 {
		t.Fatalf("got %d %+v, want 400 naming line 7777", r.status, r.err)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 0 {
		t.Fatalf("%d samples stored, want 0 (all-or-nothing)", n)
	}
}

func TestSamplesRetriesAreDuplicates(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	body := ndjson(0, 1000)
	if a, d := accepted(t, e.post("/api/v1/samples", "application/x-ndjson", body)); a != 1000 || d != 0 {
		t.Fatalf("first: %d/%d", a, d)
	}
	if a, d := accepted(t, e.post("/api/v1/samples", "application/x-ndjson", body)); a != 0 || d != 1000 {
		t.Fatalf("retry: accepted %d duplicates %d, want 0 1000", a, d)
	}
	// Overlapping batch, and a repeat inside one body.
	over := append(ndjson(900, 1100), []byte(sampleLine(1050)+"\n")...)
	if a, d := accepted(t, e.post("/api/v1/samples", "application/x-ndjson", over)); a != 100 || d != 101 {
		t.Fatalf("overlap: accepted %d duplicates %d, want 100 101", a, d)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 1100 {
		t.Fatalf("%d rows, want 1100", n)
	}
}

func TestSamplesAcrossDays(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	// Five days back to back: the first day's neighbours are prepared, the
	// rest need partitions mid-request.
	var b strings.Builder
	for d := 0; d < 5; d++ {
		for i := 0; i < 20; i++ {
			tm := testNow.Add(-time.Duration(d) * 24 * time.Hour).Add(-time.Duration(i) * time.Minute)
			fmt.Fprintf(&b, `{"request_id":"d%d-%d","time":%q,"model":"m","total_ms":5}`+"\n", d, i, tm.Format(time.RFC3339))
		}
	}
	if a, d := accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(b.String()))); a != 100 || d != 0 {
		t.Fatalf("accepted %d duplicates %d, want 100 0", a, d)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 100 {
		t.Fatalf("%d rows, want 100", n)
	}
}

func TestSamplesConcurrentClients(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	// Eight clients, each with 1,000 samples of its own and the same 500
	// shared ones in a different order: every shared sample is stored
	// once and counted as a duplicate by the other seven.
	const clients, own, shared = 8, 1000, 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	totalA, totalD := 0, 0
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var lines []string
			for i := 0; i < shared; i++ {
				lines = append(lines, sampleLine(100000+(i+c*61)%shared))
			}
			for i := 0; i < own; i++ {
				lines = append(lines, sampleLine(c*own+i))
			}
			for k := 0; k < 3; k++ { // three batches per client
				part := lines[k*len(lines)/3 : (k+1)*len(lines)/3]
				req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/samples", strings.NewReader(strings.Join(part, "\n")))
				req.Header.Set("Authorization", "Bearer "+e.write)
				req.Header.Set("Content-Type", "application/x-ndjson")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				var v struct{ Accepted, Duplicates int }
				err = json.NewDecoder(res.Body).Decode(&v)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("client %d: status %d, %v", c, res.StatusCode, err)
					return
				}
				mu.Lock()
				totalA += v.Accepted
				totalD += v.Duplicates
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if totalA != clients*own+shared || totalD != (clients-1)*shared {
		t.Fatalf("accepted %d duplicates %d, want %d %d", totalA, totalD, clients*own+shared, (clients-1)*shared)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != clients*own+shared {
		t.Fatalf("%d rows, want %d", n, clients*own+shared)
	}
}

func TestSamplesSlowBodyTimesOut(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, func(c *web.Config) { c.RequestTimeout = 500 * time.Millisecond })
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(ndjson(0, 100))
		time.Sleep(3 * time.Second) // a stalled client
		pw.CloseWithError(errors.New("gave up"))
	}()
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/samples", pr)
	req.Header.Set("Authorization", "Bearer "+e.write)
	req.Header.Set("Content-Type", "application/x-ndjson")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("stalled upload answered %d, want 408", res.StatusCode)
		}
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("the server waited %v for a stalled body; the limit is 500ms", d)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 0 {
		t.Fatalf("%d samples stored from a timed-out request", n)
	}
}

// A pretty-printed sample (jq's default output) is one record, through
// the COPY path as through the line-by-line one.
func TestSamplesPrettyPrinted(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	var body bytes.Buffer
	for i := 0; i < 3; i++ {
		if err := json.Indent(&body, []byte(sampleLine(i)), "", "  "); err != nil {
			t.Fatal(err)
		}
		body.WriteByte('\n')
	}
	if a, _ := accepted(t, e.post("/api/v1/samples", "application/json", body.Bytes())); a != 3 {
		t.Fatalf("accepted %d pretty-printed samples, want 3", a)
	}
	if n := e.count(`SELECT count(*) FROM samples`); n != 3 {
		t.Fatalf("%d samples stored", n)
	}
}
