// Package bench measures Waterline's hot paths against their floor. Run it
// with bench/ingest.sh (or go test -run '^$' -bench . ./bench); it needs the
// same Postgres as the tests (WATERLINE_TEST_DATABASE_URL).
package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
)

const (
	batchSize = 5000
	batches   = 20 // 100,000 rows per measured pass
)

// fixture is one data set in both forms: NDJSON batches for the API and
// the same rows for a raw COPY.
type fixture struct {
	bodies [][]byte
	rows   [][]any
}

var stageNames = correlate.StageNames()

func newFixture(base time.Time) fixture {
	var f fixture
	models := []string{"chat-7b", "vision-xl", "rerank-large"}
	for b := 0; b < batches; b++ {
		var buf bytes.Buffer
		for i := 0; i < batchSize; i++ {
			n := b*batchSize + i
			t := base.Add(time.Duration(n) * 10 * time.Millisecond)
			m := models[n%3]
			stages := make([]float64, correlate.NumStages)
			fmt.Fprintf(&buf, `{"request_id":"req-%09d","time":%q,"model":%q,"version":"v2.12.%d","tenant":"t-%d","replica":"%s-%d","node":"gpu-node-%02d","entry":"/v1/%s","batch_size":%d,"status":"ok","total_ms":%.3f,"stages_ms":{`,
				n, t.Format(time.RFC3339Nano), m, n%2, n%7, m, n%12, n%6, m, 1+n%8, 40+float64(n%997)/7)
			for s, name := range stageNames {
				stages[s] = float64((n*(s+3))%500) / 13
				if s > 0 {
					buf.WriteByte(',')
				}
				fmt.Fprintf(&buf, `%q:%.3f`, name, stages[s])
			}
			fmt.Fprintf(&buf, "},\"sample_rate\":%d}\n", 1+n%90)
			row := []any{t, fmt.Sprintf("req-%09d", n), m, fmt.Sprintf("v2.12.%d", n%2), fmt.Sprintf("t-%d", n%7),
				fmt.Sprintf("%s-%d", m, n%12), fmt.Sprintf("gpu-node-%02d", n%6), "/v1/" + m, int32(1 + n%8), "ok",
				40 + float64(n%997)/7}
			for _, v := range stages {
				row = append(row, v)
			}
			row = append(row, float64(1+n%90))
			f.rows = append(f.rows, row)
		}
		f.bodies = append(f.bodies, buf.Bytes())
	}
	return f
}

var sampleColumns = []string{"time", "request_id", "model", "version", "tenant", "replica", "node", "entry", "batch_size",
	"status", "total_ms", "gateway_ms", "auth_ms", "route_ms", "queue_ms", "batch_wait_ms", "exec_ms", "postprocess_ms",
	"downstream_ms", "sample_rate"}

// BenchmarkSamplesIngest measures samples ingest over HTTP end to end
// (NDJSON, batches of 5,000, one client) and a raw COPY of the same rows
// into the same table, alternately in the same run, and reports both rates
// and their ratio (the figure tracked; goal ≥ 0.8). The _4clients figures
// repeat the HTTP side with four concurrent clients, as several gateways
// would send.
func BenchmarkSamplesIngest(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	st := store.New(pool)
	base := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	f := newFixture(base)
	if err := st.EnsurePartitions(ctx, store.TableSamples, base, base.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	secret, _, err := st.CreateToken(ctx, "bench", store.ScopeWrite)
	if err != nil {
		b.Fatal(err)
	}
	ws := web.NewServer(web.Config{
		PublicURL: "http://bench", IngestMaxBytes: 64 << 20, IngestMaxLines: 200000,
		IngestMaxAge: 30 * 24 * time.Hour, IngestMaxFuture: time.Hour, RequestTimeout: time.Minute,
	}, web.Deps{Store: st})
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { _ = ws.WatchAuth(wctx) }() // as serve: the token cache serves
	srv := httptest.NewServer(ws)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

	post := func(body []byte) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/samples", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/x-ndjson")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("ingest: %d", res.StatusCode)
		}
	}
	viaHTTP := func(clients int) time.Duration {
		truncate(b, pool)
		start := time.Now()
		var wg sync.WaitGroup
		next := make(chan []byte)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for body := range next {
					post(body)
				}
			}()
		}
		for _, body := range f.bodies {
			next <- body
		}
		close(next)
		wg.Wait()
		d := time.Since(start)
		checkCount(b, pool)
		return d
	}
	viaCopy := func() time.Duration {
		truncate(b, pool)
		start := time.Now()
		for k := 0; k < batches; k++ {
			if _, err := pool.CopyFrom(ctx, pgx.Identifier{"samples"}, sampleColumns,
				pgx.CopyFromRows(f.rows[k*batchSize:(k+1)*batchSize])); err != nil {
				b.Fatal(err)
			}
		}
		d := time.Since(start)
		checkCount(b, pool)
		return d
	}
	viaHTTP(1) // warm up caches, prepared statements and the WAL
	viaCopy()

	var httpT, copyT, http4T time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate the order so drift (checkpoints, other load) hits both.
		if i%2 == 0 {
			httpT += viaHTTP(1)
			copyT += viaCopy()
		} else {
			copyT += viaCopy()
			httpT += viaHTTP(1)
		}
		http4T += viaHTTP(4)
	}
	b.StopTimer()
	rows := float64(b.N * batches * batchSize)
	b.ReportMetric(rows/httpT.Seconds(), "http_rows/s")
	b.ReportMetric(rows/copyT.Seconds(), "copy_rows/s")
	b.ReportMetric(copyT.Seconds()/httpT.Seconds(), "ratio")
	b.ReportMetric(rows/http4T.Seconds(), "http_4clients_rows/s")
	b.ReportMetric(copyT.Seconds()/http4T.Seconds(), "ratio_4clients")
}

func truncate(b *testing.B, pool *pgxpool.Pool) {
	if _, err := pool.Exec(context.Background(), `TRUNCATE samples`); err != nil {
		b.Fatal(err)
	}
}

func checkCount(b *testing.B, pool *pgxpool.Pool) {
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM samples`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	if n != batches*batchSize {
		b.Fatalf("%d rows stored, want %d", n, batches*batchSize)
	}
}
