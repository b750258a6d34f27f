package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
)

// hugeLine is an events body whose one line is n bytes of summary,
// gzipped (60 MB compress to about 61 KB).
func hugeLine(b *testing.B, n int) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	io.WriteString(zw, `{"kind":"deploy","time":"`+time.Now().UTC().Format(time.RFC3339)+`","summary":"`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for w := 0; w < n; w += len(chunk) {
		zw.Write(chunk)
	}
	io.WriteString(zw, "\"}\n")
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// peakRSS reads the process's peak resident set (VmHWM) in bytes;
// resetPeakRSS starts a new peak (Linux: clear_refs 5).
func peakRSS(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Skip("no VmHWM")
	return 0
}

func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skip("cannot reset the peak RSS:", err)
	}
}

// BenchmarkHugeRecordMemory sends 20 events requests at once, each one
// 60 MB line gzipped to ~61 KB (the memory blow-up), to a server
// in this process, and reports the process's peak RSS over the burst
// (goal: under 200 MB) and how long the burst took. Every request must
// be refused with 413 at the record bound.
func BenchmarkHugeRecordMemory(b *testing.B) {
	ctx := context.Background()
	st := store.New(storetest.NewPool(b))
	secret, _, err := st.CreateToken(ctx, "bench", store.ScopeWrite)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(web.NewServer(web.Config{
		PublicURL: "http://bench", IngestMaxBytes: 64 << 20, IngestMaxLines: 200000,
		IngestMaxAge: 30 * 24 * time.Hour, IngestMaxFuture: time.Hour, RequestTimeout: time.Minute,
	}, web.Deps{Store: st}))
	defer srv.Close()
	body := hugeLine(b, 60<<20)
	b.Logf("one request: %d bytes gzipped, 60 MiB decompressed", len(body))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	const parallel = 20
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resetPeakRSS(b)
		var wg sync.WaitGroup
		errs := make(chan error, parallel)
		for k := 0; k < parallel; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", srv.URL+"/api/v1/events", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+secret)
				req.Header.Set("Content-Type", "application/x-ndjson")
				req.Header.Set("Content-Encoding", "gzip")
				res, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusRequestEntityTooLarge {
					errs <- fmt.Errorf("status %d, want 413", res.StatusCode)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		peak = max(peak, peakRSS(b))
	}
	b.StopTimer()
	b.ReportMetric(float64(peak)/(1<<20), "peak_rss_MB")
}
