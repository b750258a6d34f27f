package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/stacktest"
	"github.com/waterline-dev/waterline/otlp"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/wire"
)

const otlpSamples = 100_000

// otlpFixture is one set of request samples as OTLP/protobuf export
// requests of 512 spans (captured from the official exporter, each sample
// re-emitted as the 6–7 spans of a gateway and a model server) and as
// NDJSON bodies of 5,000 samples for the sample API.
type otlpFixture struct {
	traceBodies [][]byte
	jsonBodies  [][]byte
	spans       int
}

func newOTLPFixture(b *testing.B, base time.Time) otlpFixture {
	var f otlpFixture
	var mu sync.Mutex
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		f.traceBodies = append(f.traceBodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer capture.Close()
	exp := stacktest.Exporter(b, capture.URL, "x", otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	models := []string{"chat-7b", "vision-xl", "rerank-large"}
	var batch []tracetest.SpanStub
	var nd bytes.Buffer
	enc := json.NewEncoder(&nd)
	for n := 0; n < otlpSamples; n++ {
		m := models[n%3]
		s := correlate.Sample{RequestID: fmt.Sprintf("%016x", 1+n), Time: base.Add(time.Duration(n) * 10 * time.Millisecond),
			Model: m, Version: fmt.Sprintf("v2.12.%d", n%2), Tenant: fmt.Sprintf("t-%d", n%7), Replica: fmt.Sprintf("%s-%d", m, n%12),
			Node: fmt.Sprintf("gpu-node-%02d", n%6), Entry: "/v1/" + m, BatchSize: 1 + n%8, Status: "ok", SampleRate: float64(1 + n%90)}
		for st := range s.StagesMs {
			s.StagesMs[st] = math.Round(float64((n*(st+3))%500)/13*1000) / 1000
			s.TotalMs += s.StagesMs[st]
		}
		spans := stacktest.SampleSpans(s, "vector-db")
		f.spans += len(spans)
		batch = append(batch, spans...)
		if len(batch) >= 512 {
			if err := exp.ExportSpans(context.Background(), tracetest.SpanStubs(batch[:512]).Snapshots()); err != nil {
				b.Fatal(err)
			}
			batch = append(batch[:0], batch[512:]...)
		}
		if err := enc.Encode(wire.NewSample(s)); err != nil {
			b.Fatal(err)
		}
		if (n+1)%5000 == 0 {
			f.jsonBodies = append(f.jsonBodies, bytes.Clone(nd.Bytes()))
			nd.Reset()
		}
	}
	if len(batch) > 0 {
		if err := exp.ExportSpans(context.Background(), tracetest.SpanStubs(batch).Snapshots()); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// BenchmarkOTLPIngest measures samples per second through POST /v1/traces
// (protobuf, batches of 512 spans, until the last sample is stored) next
// to the JSON sample API on the same samples in the same run. Goal: OTLP
// ≥ 0.5 × the JSON API. inflight is how many requests each client keeps
// open: 1 as the SDK's batch span processor exports, 4 (the server's
// ingest slots) as a Collector's otlphttp exporter does with its sending
// queue (10 consumers by default) and as a parallel JSON pusher would.
func BenchmarkOTLPIngest(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	st := store.New(pool)
	base := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	if err := st.EnsurePartitions(ctx, store.TableSamples, base, base.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	secret, _, err := st.CreateToken(ctx, "bench", store.ScopeWrite)
	if err != nil {
		b.Fatal(err)
	}
	f := newOTLPFixture(b, base)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	post := func(url, ctype string, body []byte) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", ctype)
		res, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Errorf("%s: %d", url, res.StatusCode)
		}
	}
	// postAll posts the bodies in order with up to inflight at once.
	postAll := func(url, ctype string, bodies [][]byte, inflight int) {
		var wg sync.WaitGroup
		slots := make(chan struct{}, inflight)
		for _, body := range bodies {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				post(url, ctype, body)
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}
	// copies counts the assembler's store transactions (one COPY each).
	var copies atomic.Int64
	// server is a fresh server (and assembler: it remembers emitted trace
	// ids) over the emptied table.
	server := func() (*httptest.Server, *otlp.Assembler, func()) {
		truncate(b, pool)
		cfg := otlp.DefaultConfig()
		cfg.Grace = 100 * time.Millisecond
		storeSink := web.StoreSink(st)
		sink := func(ctx context.Context, samples []correlate.Sample) error {
			copies.Add(1)
			return storeSink(ctx, samples)
		}
		a := otlp.NewAssembler(cfg, otlp.Options{Sink: sink, MaxAge: 30 * 24 * time.Hour, MaxFuture: time.Hour})
		actx, stop := context.WithCancel(ctx)
		go a.Run(actx, 20*time.Millisecond)
		ws := web.NewServer(web.Config{
			PublicURL: "http://bench", IngestMaxBytes: 64 << 20, IngestMaxLines: 200000,
			IngestMaxAge: 30 * 24 * time.Hour, IngestMaxFuture: time.Hour, RequestTimeout: time.Minute,
		}, web.Deps{Store: st, Traces: a})
		go func() { _ = ws.WatchAuth(actx) }() // as serve: the token cache serves
		srv := httptest.NewServer(ws)
		return srv, a, func() { srv.Close(); stop() }
	}
	// tail is the part of an OTLP run after the last export was answered:
	// the last traces' grace, the next flush and their COPY.
	var tail time.Duration
	viaOTLP := func(inflight int) (time.Duration, time.Duration) {
		srv, a, done := server()
		defer done()
		start, cpu0 := time.Now(), cpuTime()
		postAll(srv.URL+"/v1/traces", "application/x-protobuf", f.traceBodies, inflight)
		posted := time.Now()
		for a.Stats().Samples.Load() < otlpSamples {
			time.Sleep(2 * time.Millisecond)
		}
		d, cpu := time.Since(start), cpuTime()-cpu0
		tail += time.Since(posted)
		if got := a.Stats().Samples.Load(); got != otlpSamples {
			b.Fatalf("%d samples from %d traces", got, otlpSamples)
		}
		return d, cpu
	}
	// decodeOnly is the protobuf decoding of every export body alone, one
	// at a time in this goroutine: the part of OTLP's cost no mapping or
	// storing can remove (8 spans per sample against one JSON record).
	decodeOnly := func() time.Duration {
		start := time.Now()
		for _, body := range f.traceBodies {
			req, err := otlp.Decode(body, otlp.Protobuf)
			if err != nil {
				b.Fatal(err)
			}
			req.Release() // as the receiver does once a request is filed
		}
		return time.Since(start)
	}
	viaJSON := func(inflight int) (time.Duration, time.Duration) {
		srv, _, done := server()
		defer done()
		start, cpu0 := time.Now(), cpuTime()
		postAll(srv.URL+"/api/v1/samples", "application/x-ndjson", f.jsonBodies, inflight)
		return time.Since(start), cpuTime() - cpu0
	}
	viaOTLP(1) // warm up
	viaJSON(1)
	for _, inflight := range []int{1, 4} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			var otlpT, jsonT, otlpCPU, jsonCPU, decodeT time.Duration
			tail = 0
			copies.Store(0)
			add := func(t, cpu *time.Duration) func(d, c time.Duration) {
				return func(d, c time.Duration) { *t += d; *cpu += c }
			}
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					add(&otlpT, &otlpCPU)(viaOTLP(inflight))
					add(&jsonT, &jsonCPU)(viaJSON(inflight))
				} else {
					add(&jsonT, &jsonCPU)(viaJSON(inflight))
					add(&otlpT, &otlpCPU)(viaOTLP(inflight))
				}
				decodeT += decodeOnly()
			}
			n := float64(b.N * otlpSamples)
			// CPU time of this process (server and client; not Postgres)
			// per sample: steadier than wall time on a shared machine.
			b.ReportMetric(float64(otlpCPU.Microseconds())/n, "otlp_cpu_µs/sample")
			b.ReportMetric(float64(jsonCPU.Microseconds())/n, "json_cpu_µs/sample")
			b.ReportMetric(n/otlpT.Seconds(), "otlp_samples/s")
			b.ReportMetric(float64(b.N*f.spans)/otlpT.Seconds(), "otlp_spans/s")
			b.ReportMetric(n/jsonT.Seconds(), "json_samples/s")
			b.ReportMetric(jsonT.Seconds()/otlpT.Seconds(), "ratio")
			b.ReportMetric(float64(tail.Milliseconds())/float64(b.N), "otlp_tail_ms")
			// The ratio a steady stream sees: the tail is the last traces'
			// grace (a latency each trace pays once, not a cost per
			// sample), and the filer keeps up (its queue is bounded: Add
			// files when it is full, so the answers wait for filing).
			b.ReportMetric(jsonT.Seconds()/(otlpT-tail).Seconds(), "ratio_without_tail")
			// The JSON API stores each 5,000-sample request in one COPY.
			b.ReportMetric(n/float64(copies.Load()), "otlp_samples/COPY")
			b.ReportMetric(float64(decodeT.Microseconds())/n, "decode_µs/sample")
			// The ratio OTLP would reach if decoding one export at a time
			// were all it cost.
			b.ReportMetric(jsonT.Seconds()/decodeT.Seconds(), "decode_bound_ratio")
		})
	}
}

// cpuTime is the CPU time this process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
