package promrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/testclock"
)

func TestBackfillSplitAndRestart(t *testing.T) {
	// 5 hours of a gauge and a counter at 60 s from 05:30: four 2-hour
	// windows (04–06, 06–08, 08–10, 10–12).
	t0 := testclock.Now().Truncate(24 * time.Hour).Add(-24*time.Hour + 5*time.Hour + 30*time.Minute)
	var b strings.Builder
	b.WriteString("# HELP g A gauge.\n# TYPE g gauge\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "g{k=\"a b\"} %d %d\n", i, t0.Add(time.Duration(i)*time.Minute).Unix())
	}
	b.WriteString("# TYPE c counter\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "c_total %d %d\n", 2*i, t0.Add(time.Duration(i)*time.Minute).Unix())
	}
	b.WriteString("# EOF\n")
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	done := 0
	p.Progress = func(d, total int) { done, _ = d, total }
	if err := p.Backfill(context.Background(), strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	if done != 4 {
		t.Fatalf("progress reported %d windows done, want 4", done)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	count := func(q string) float64 {
		t.Helper()
		u := p.URL + "/api/v1/query?" + url.Values{"query": {q}, "time": {fmt.Sprint(t0.Add(299 * time.Minute).Unix())}}.Encode()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Data.Result) != 1 {
			t.Fatalf("query %s: %v %+v", q, err, r)
		}
		var v float64
		fmt.Sscan(r.Data.Result[0].Value[1].(string), &v)
		return v
	}
	if n := count(`count_over_time(g[6h])`); n != 300 {
		t.Fatalf("gauge samples = %v, want 300 (all windows backfilled)", n)
	}
	if n := count(`count_over_time(c_total[6h])`); n != 300 {
		t.Fatalf("counter samples = %v, want 300", n)
	}
	p.Stop()
	if p.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := http.Get(p.URL + "/-/ready"); err == nil {
		t.Fatal("prometheus still answers after Stop")
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(`count_over_time(g[6h])`); n != 300 {
		t.Fatalf("after restart: %v samples", n)
	}
}

func TestBackfillWindowsAndBadInput(t *testing.T) {
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	t0 := testclock.Now().Truncate(24 * time.Hour).Add(-24*time.Hour + 5*time.Hour)
	err = p.BackfillWindows(context.Background(), t0, t0.Add(3*time.Hour), func(w io.Writer, lo, hi time.Time) error {
		fmt.Fprintf(w, "# TYPE g gauge\n")
		for ts := lo; ts.Before(hi); ts = ts.Add(time.Minute) {
			fmt.Fprintf(w, "g 1 %d\n", ts.Unix())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A sample without a timestamp cannot be placed in a window: the
	// split refuses it and says why.
	err = p.Backfill(context.Background(), strings.NewReader("# TYPE h gauge\nh 1\n# EOF\n"))
	if err == nil || !strings.Contains(err.Error(), "timestamp") {
		t.Fatalf("bad input: err = %v, want a timestamp complaint", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatal("not running after Start")
	}
	if err := p.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
}

// The free port New picked was taken, before Start, by another
// Prometheus (another test's): its /-/ready answered for ours, and every
// query read the other one's data — a replay pulled all its sources
// empty, without an error. Start now checks which TSDB answers, and a
// first start moves to another port.
func TestStartDoesNotTakeAnotherServerForItself(t *testing.T) {
	ctx := context.Background()
	other, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	p.addr, p.URL = other.addr, other.URL // the port was taken meanwhile
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if p.URL == other.URL {
		t.Fatalf("started on %s, the other server's address", p.URL)
	}
	if ours, err := p.servesOurTSDB(ctx); err != nil || !ours {
		t.Errorf("the server at %s serves another TSDB (%v)", p.URL, err)
	}
	// Restarted, it keeps its (now free) address.
	url := p.URL
	p.Stop()
	if err := p.Start(ctx); err != nil || p.URL != url {
		t.Errorf("restart: %v, URL %s, want %s", err, p.URL, url)
	}
}

// A CI run lost a replay to "bind: address already in use": a socket
// that is not a Prometheus took the picked port before Prometheus bound
// it, and Prometheus exited. A first start moves to another port; a
// restart, which must keep its URL, waits for the port to come free.
func TestStartGetsPastAPortHeldByAnotherSocket(t *testing.T) {
	ctx := context.Background()
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	taken := p.URL
	if err := p.Start(ctx); err != nil {
		ln.Close()
		t.Fatalf("first start on a taken port: %v", err)
	}
	ln.Close()
	if p.URL == taken {
		t.Fatalf("started on %s, which another socket held", p.URL)
	}
	url := p.URL
	p.Stop()
	ln, err = net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(1500 * time.Millisecond); ln.Close() }()
	if err := p.Start(ctx); err != nil || p.URL != url {
		t.Fatalf("restart while the port was held for 1.5 s: %v, URL %s, want %s", err, p.URL, url)
	}
}
