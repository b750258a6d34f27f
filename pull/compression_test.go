package pull

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPrometheusCompression: by default the puller asks a real Prometheus
// for plain answers (gzipping a large range answer costs Prometheus more
// than the bytes save next to it); with Options.Compression it asks for
// gzip, Prometheus gzips, and the points read are the same.
func TestPrometheusCompression(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 4, 480)
	// A pass-through proxy in front of the real Prometheus records what
	// was asked for and what came back.
	target, _ := url.Parse(prom.URL)
	var mu sync.Mutex
	var asked, answered []string
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(res *http.Response) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, res.Request.Header.Get("Accept-Encoding"))
		answered = append(answered, res.Header.Get("Content-Encoding"))
		return nil
	}
	proxy := httptest.NewServer(rp)
	defer proxy.Close()

	var points [2]int
	for i, compress := range []bool{false, true} {
		mu.Lock()
		asked, answered = nil, nil
		mu.Unlock()
		p, err := New(&Config{}, Backend{URL: proxy.URL, Compression: compress}, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Through retry, as the history pull queries: under a loaded CI
		// machine a connection was once cut mid-answer (unexpected EOF),
		// which is not what this test is about.
		var series []Series
		err = retry(context.Background(), 3, func() error {
			var err error
			series, err = p.QueryRange(context.Background(), "p99_ms", start, start.Add(2*time.Hour), 15*time.Second)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range series {
			points[i] += len(s.Points)
		}
		// Every attempt (a retry included) must have asked and been
		// answered the same way.
		mu.Lock()
		for k := range asked {
			switch {
			case !compress && (strings.Contains(asked[k], "gzip") || answered[k] != ""):
				t.Errorf("default: asked %q, answered %q; want a plain answer", asked[k], answered[k])
			case compress && (!strings.Contains(asked[k], "gzip") || answered[k] != "gzip"):
				t.Errorf("Compression: asked %q, answered %q; want gzip", asked[k], answered[k])
			}
		}
		if len(asked) == 0 {
			t.Errorf("compress=%t: the proxy saw no answer", compress)
		}
		mu.Unlock()
	}
	if points[0] != 4*481 || points[1] != points[0] {
		t.Errorf("points read plain %d, gzipped %d; want %d both ways", points[0], points[1], 4*481)
	}
}
