package pull

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// An ad-hoc query whose first answer is cut mid-body (the connection
// closed, as a proxy or a restarting Prometheus does) is asked once more
// and answers; an expression Prometheus rejects is asked once and comes
// back as Rejected.
func TestAdhocQueryRetriesACutAnswer(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 1, 240)
	target, _ := url.Parse(prom.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var asked atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 1 {
			// Half an answer, then the connection goes.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":`))
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	p, err := New(&Config{}, Backend{URL: proxy.URL}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	series, err := p.QueryRange(context.Background(), "p99_ms", start, start.Add(59*time.Minute), 15*time.Second)
	if err != nil {
		t.Fatalf("a cut answer was not asked again: %v", err)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times, want 2 (the cut answer, then the retry)", n)
	}
	if len(series) != 1 || len(series[0].Points) != 237 {
		t.Errorf("got %d series (first with %d points), want 1 with 237", len(series), func() int {
			if len(series) == 0 {
				return 0
			}
			return len(series[0].Points)
		}())
	}

	asked.Store(1) // the proxy passes everything from now on
	_, err = p.QueryRange(context.Background(), "rate(p99_ms", start, start.Add(time.Hour), 15*time.Second)
	var qe *QueryError
	if !errors.As(err, &qe) || !qe.Rejected {
		t.Fatalf("a bad expression: got %v, want a rejected QueryError", err)
	}
	if n := asked.Load() - 1; n != 1 {
		t.Errorf("a rejected expression was asked %d times, want once", n)
	}
}
