package ingest_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/ingest"
	"github.com/waterline-dev/waterline/web/request"
)

var lim = ingest.Limits{MaxBytes: 1 << 20, MaxRecords: 3, MaxAge: 24 * time.Hour, MaxFuture: time.Hour}

func post(ctype, encoding string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", ctype)
	if encoding != "" {
		r.Header.Set("Content-Encoding", encoding)
	}
	return r
}

// records reads every record of a body: its numbers, or the error.
func records(t *testing.T, r *http.Request, l ingest.Limits) ([]int, error) {
	t.Helper()
	b, err := ingest.Open(r, l)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var lines []int
	for {
		_, line, err := b.Next()
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, line)
	}
}

// status is the HTTP status and line a decoding error answers with.
func status(t *testing.T, err error) (int, int, string) {
	t.Helper()
	var re *request.Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a request.Error", err, err)
	}
	return re.Status, re.Line, re.Field
}

func TestFramingNumbersRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ctype, body string
		want              []int
	}{
		{"ndjson counts physical lines", "application/x-ndjson", "{}\n\n{}\n", []int{1, 3}},
		{"an array in a json body", "application/json", " [ {}, {} ] ", []int{1, 2}},
		{"an array after blank lines", "application/json", "\n\n[{}, {}]", []int{1, 2}},
		{"ndjson in a json body", "application/json", "{}\n{}", []int{1, 2}},
	} {
		got, err := records(t, post(tc.ctype, "", []byte(tc.body)), lim)
		if err != nil || len(got) != len(tc.want) || got[len(got)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("%s: records %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("{}\n{}\n"))
	zw.Close()
	if got, err := records(t, post("application/x-ndjson", "gzip", gz.Bytes()), lim); err != nil || len(got) != 2 {
		t.Errorf("gzip: %v (%v)", got, err)
	}
}

func TestFramingRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ctype, encoding, body string
		status, line                int
		field                       string
	}{
		{"unknown type", "text/csv", "", "a,b", 415, 0, "Content-Type"},
		{"unknown encoding", "application/x-ndjson", "br", "{}", 415, 0, "Content-Encoding"},
		{"not gzip", "application/x-ndjson", "gzip", "{}", 400, 0, "Content-Encoding"},
		{"empty", "application/x-ndjson", "", "\n\n", 400, 0, ""},
		{"too many records", "application/x-ndjson", "", "{}\n{}\n{}\n{}\n", 413, 4, ""},
		{"broken array", "application/json", "", `[{}, {"a":`, 400, 2, ""},
		{"data after the array", "application/json", "", `[{}] {}`, 400, 2, ""},
		// Blank lines before the array are not elements: its second
		// element is record 2 (they counted as NDJSON lines: 4).
		{"broken array after blank lines", "application/json", "", "\n\n[{}, {\"a\":", 400, 2, ""},
		{"too many elements after blank lines", "application/json", "", "\r\n\n[{}, {}, {}, {}]", 413, 4, ""},
	} {
		_, err := records(t, post(tc.ctype, tc.encoding, []byte(tc.body)), lim)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if st, line, field := status(t, err); st != tc.status || line != tc.line || field != tc.field {
			t.Errorf("%s: %d line %d field %q (%v), want %d line %d field %q", tc.name, st, line, field, err, tc.status, tc.line, tc.field)
		}
	}
	// Past the decompressed limit: 413, however small the gzip was.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte(" "), 2<<20))
	zw.Close()
	_, err := records(t, post("application/x-ndjson", "gzip", gz.Bytes()), lim)
	if st, _, _ := status(t, err); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a gzip bomb: %d (%v)", st, err)
	}
}

func TestSamplesCheckEveryRecord(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	ok := `{"request_id":"a","time":"2026-06-01T11:00:00Z","model":"m","total_ms":12.5,"stages_ms":{"queue":2}}`
	b, err := ingest.Open(post("application/x-ndjson", "", []byte(ok+"\n"+strings.Replace(ok, `"total_ms":12.5`, `"total_ms":-1`, 1))), lim)
	if err != nil {
		t.Fatal(err)
	}
	next := ingest.Samples(b, lim, now)
	var s correlate.Sample
	if err := next(&s); err != nil || s.TotalMs != 12.5 || s.SampleRate != 1 || s.StagesMs[correlate.StageQueue] != 2 {
		t.Fatalf("first sample %+v (%v)", s, err)
	}
	// An LLM request's token counts, when sent.
	b, _ = ingest.Open(post("application/x-ndjson", "", []byte(strings.Replace(ok, `"total_ms"`, `"input_tokens":812,"output_tokens":64,"total_ms"`, 1))), lim)
	if err := ingest.Samples(b, lim, now)(&s); err != nil || s.InputTokens != 812 || s.OutputTokens != 64 {
		t.Fatalf("token counts: %d %d (%v)", s.InputTokens, s.OutputTokens, err)
	}
	if st, line, field := status(t, next(&s)); st != 422 || line != 2 || field != "total_ms" {
		t.Fatalf("negative total: %d line %d field %s", st, line, field)
	}
	b, _ = ingest.Open(post("application/x-ndjson", "", []byte(strings.Replace(ok, "11:00", "13:30", 1))), lim)
	if st, _, field := status(t, ingest.Samples(b, lim, now)(&s)); st != 422 || field != "time" {
		t.Fatalf("a sample from the future: %d %s", st, field)
	}
	// Values no request can have: each would overflow the page's and the
	// analysis' sums to +Inf (a heatmap whose scale never ended ran the
	// server out of memory).
	for field, rec := range map[string]string{
		"total_ms":        strings.Replace(ok, `"total_ms":12.5`, `"total_ms":1.5e308`, 1),
		"stages_ms.queue": strings.Replace(ok, `"queue":2`, `"queue":1e300`, 1),
		"stages_ms.exec":  strings.Replace(ok, `"queue":2`, `"queue":2,"exec":-3`, 1),
		"sample_rate":     strings.Replace(ok, `"total_ms"`, `"sample_rate":1e308,"total_ms"`, 1),
		"input_tokens":    strings.Replace(ok, `"total_ms"`, `"input_tokens":-4,"total_ms"`, 1),
		"output_tokens":   strings.Replace(ok, `"total_ms"`, `"output_tokens":16777217,"total_ms"`, 1),
	} {
		b, _ = ingest.Open(post("application/x-ndjson", "", []byte(rec)), lim)
		if st, _, got := status(t, ingest.Samples(b, lim, now)(&s)); st != 422 || got != field {
			t.Errorf("%s: %d %s", rec, st, got)
		}
	}
}

func TestEventsWithoutIDAreIdempotent(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	body := `{"kind":"deploy","time":"2026-06-01T11:00:00Z","model":"chat","summary":"v2"}`
	read := func(body string) ([]correlate.Event, error) {
		b, err := ingest.Open(post("application/x-ndjson", "", []byte(body)), lim)
		if err != nil {
			return nil, err
		}
		evs, _, err := ingest.Events(b, lim, now)
		return evs, err
	}
	a, err1 := read(body)
	b, err2 := read(body)
	if err1 != nil || err2 != nil || a[0].ID == "" || a[0].ID != b[0].ID || a[0].Scope.Model != "chat" {
		t.Fatalf("events %+v %+v (%v %v)", a, b, err1, err2)
	}
	if _, err := read(`{"kind":"deploi","time":"2026-06-01T11:00:00Z"}`); err == nil {
		t.Fatal("an unknown kind was accepted")
	} else if st, line, field := status(t, err); st != 422 || line != 1 || field != "kind" {
		t.Fatalf("unknown kind: %d line %d field %s", st, line, field)
	}
}

// TestAnnotationWithoutTimeIsNow: an annotation without a time is stored
// at the moment it arrived, not at the start of its minute, and a retry
// within the minute is the same event.
func TestAnnotationWithoutTimeIsNow(t *testing.T) {
	t.Parallel()
	body := `{"tags":["deploy","model:chat"],"text":"v2"}`
	read := func(now time.Time) (correlate.Event, int64) {
		t.Helper()
		e, id, err := ingest.Annotation(post("application/json", "", []byte(body)), lim, now)
		if err != nil {
			t.Fatal(err)
		}
		return e, id
	}
	at := time.Date(2026, 6, 1, 12, 0, 47, 250_000_000, time.UTC)
	a, idA := read(at)
	if !a.Time.Equal(at) {
		t.Errorf("stored at %s, want when it arrived (%s)", a.Time.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
	}
	b, idB := read(at.Add(5 * time.Second))
	if b.ID != a.ID || idB != idA {
		t.Errorf("a retry 5 s later: id %s/%d, want %s/%d", b.ID, idB, a.ID, idA)
	}
	if c, _ := read(at.Add(time.Minute)); c.ID == a.ID {
		t.Errorf("an annotation a minute later has the first one's id %s", c.ID)
	}
}

// The notifications below are dated around alertNow, which is handed to
// the decoder (it reads no clock).
var (
	alertNow    = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	alertLimits = ingest.Limits{MaxAge: 30 * 24 * time.Hour, MaxFuture: time.Hour}
)

func TestAlertmanagerMapsLabels(t *testing.T) {
	t.Parallel()
	body := `{"version":"4","groupKey":"g","status":"resolved","commonLabels":{"alertname":"P99High","model":"chat","pod":"chat-1"},
		"alerts":[{"status":"resolved","labels":{"alertname":"P99High","model":"chat","pod":"chat-1"},"startsAt":"2026-06-01T11:00:00Z","endsAt":"2026-06-01T11:20:00Z"}],
		"extra":"Grafana's"}`
	g, err := ingest.Alertmanager(httptest.NewRecorder(), post("application/json", "", []byte(body)), alertLimits, alertNow, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := g.Alerts[0]
	if g.Status != store.AlertResolved || g.Scope.Model != "chat" || g.Scope.Replica != "chat-1" || a.Fingerprint == "" ||
		a.EndsAt == nil || a.Event.Kind != correlate.KindAlert || !strings.HasPrefix(g.Title, "P99High") {
		t.Fatalf("group %+v", g)
	}
	_, err = ingest.Alertmanager(httptest.NewRecorder(), post("application/json", "", []byte(`{"groupKey":"g","status":"firing","alerts":[]}`)), alertLimits, alertNow, nil)
	if st, _, field := status(t, err); st != 422 || field != "alerts" {
		t.Fatalf("no alerts: %d %s", st, field)
	}
}

// gzipLongRecord compresses a body whose second record is one value of n
// bytes, in the NDJSON or the array framing, without holding it whole.
func gzipLongRecord(t *testing.T, array bool, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	first, open, sep, end := `{"kind":"deploy","time":"x"}`, "", "\n", "\n"
	if array {
		open, sep, end = "[", ",", "]"
	}
	_, _ = io.WriteString(zw, open+first+sep+`{"kind":"deploy","summary":"`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for w := 0; w < n; w += len(chunk) {
		if _, err := zw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = io.WriteString(zw, `"}`+end)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// One 60 MB record (61 KB gzipped) is refused at the record bound: 413
// naming its line, after reading not much more than the bound, and
// without buffering the line.
func TestOneHugeRecordStopsAtTheBound(t *testing.T) {
	l := ingest.Limits{MaxBytes: 64 << 20, MaxRecords: 1000, MaxRecordBytes: 256 << 10}
	for _, array := range []bool{false, true} {
		body := gzipLongRecord(t, array, 60<<20)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b, err := ingest.Open(post("application/json", "gzip", body), l)
		if err != nil {
			t.Fatal(err)
		}
		var lines []int
		for {
			_, line, err2 := b.Next()
			if err2 != nil {
				err = err2
				break
			}
			lines = append(lines, line)
		}
		runtime.ReadMemStats(&after)
		b.Close()
		st, line, _ := status(t, err)
		if st != http.StatusRequestEntityTooLarge || line != 2 || len(lines) != 1 || !strings.Contains(err.Error(), "record larger than 262144 bytes") {
			t.Errorf("array=%v: %d line %d after records %v: %v", array, st, line, lines, err)
		}
		if n := b.Read(); n > 2<<20 {
			t.Errorf("array=%v: read %d bytes of the body before refusing it", array, n)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("array=%v: allocated %d MiB decoding it", array, alloc>>20)
		}
	}
	// A record just under the bound passes.
	rec := `{"kind":"deploy","summary":"` + strings.Repeat("a", 200<<10) + `"}`
	for _, body := range []string{rec + "\n" + rec + "\n", "[" + rec + "," + rec + "]"} {
		if lines, err := records(t, post("application/json", "", []byte(body)), l); err != nil || len(lines) != 2 {
			t.Errorf("records of 200 KiB: %v %v", lines, err)
		}
	}
}

// A record followed by more than white space is not one JSON value: the
// decoder stopped at its end, and closing brackets after it were taken
// for the end of the stream, so `{…}}]]` was stored.
func TestTextAfterARecordIsRejected(t *testing.T) {
	t.Parallel()
	for _, tail := range []string{"}", "]]", "}}]]", " x", ",{}"} {
		var v struct{ A int }
		err := ingest.DecodeRecord([]byte(`{"A":1}`+tail), 3, &v)
		if st, line, _ := status(t, err); st != 400 || line != 3 {
			t.Errorf("%q after a record: %d line %d", tail, st, line)
		}
	}
	var v struct{ A int }
	if err := ingest.DecodeRecord([]byte("{\"A\":1}  \r\n"), 1, &v); err != nil || v.A != 1 {
		t.Fatalf("white space after a record: %v", err)
	}
}
