package ingest

import (
	"bytes"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// sameWire compares two decoded samples, NaN equal to NaN.
func sameWire(a, b wire.Sample) bool {
	for i := range a.StagesMs {
		if math.IsNaN(a.StagesMs[i]) != math.IsNaN(b.StagesMs[i]) {
			return false
		}
		if math.IsNaN(a.StagesMs[i]) {
			a.StagesMs[i], b.StagesMs[i] = 0, 0
		}
	}
	return reflect.DeepEqual(a, b)
}

const fastSeed = `{"request_id":"req-000000017","time":"2026-10-06T05:59:46.228Z","model":"chat-7b","version":"v2.12.8","tenant":"t-umbrella","replica":"chat-7b-w5pscjl49-ndlgl","node":"gpu-node-01","entry":"/v1/chat/completions","batch_size":2,"status":"ok","total_ms":75.742,"stages_ms":{"gateway":1.264,"auth":0.663,"route":0.301,"queue":19.676,"batch_wait":0.488,"exec":52.257,"postprocess":1.093,"downstream":0.0},"sample_rate":66}`

// FuzzSampleParser holds the fast parser to encoding/json: whatever it
// accepts, decodeRecord must accept and decode identically.
func FuzzSampleParser(f *testing.F) {
	seeds := []string{
		fastSeed,
		` { "request_id" : "a" , "time":"t", "model":"m", "total_ms": 1e3, "stages_ms": { "exec": null } } `,
		`{"request_id":"a","stages_ms":null,"total_ms":null,"sample_rate":null,"batch_size":null,"model":null}`,
		`{"request_id":"ü","model":"m","total_ms":0,"batch_size":-0}`,
		`{"model":"m","model":"n","total_ms":1,"total_ms":2}`,
		`{}`,
		`{"request_id":"a\"b"}`,
		`{"Model":"m"}`,
		`{"total_ms":-1}`,
		`{"total_ms":01}`,
		`{"total_ms":1.}`,
		`{"batch_size":4.0}`,
		`{"input_tokens":812,"output_tokens":null}`,
		`{"output_tokens":-1}`,
		`{"input_tokens":1e3}`,
		`{"stages_ms":{"exec":-1}}`,
		`{"stages_ms":{"warp":1}}`,
		`{"x":1}`,
		`{"model":"m"} {}`,
		`{"model":"m",}`,
		`[1]`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var fast, slow wire.Sample
		p := sampleParser{intern: map[string]string{}}
		if !p.parse([]byte(in), &fast) {
			return
		}
		slow = wire.Sample{StagesMs: wire.NoStages}
		if err := DecodeRecord([]byte(in), 1, &slow); err != nil {
			t.Fatalf("fast parser accepted %q, encoding/json rejects it: %v", in, err)
		}
		if !sameWire(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", in, fast, slow)
		}
	})
}

func TestSampleParserTakesTheCommonShape(t *testing.T) {
	p := sampleParser{intern: map[string]string{}}
	var w wire.Sample
	if !p.parse([]byte(fastSeed), &w) {
		t.Fatal("the fast parser gave up on an ordinary sample")
	}
	if w.RequestID != "req-000000017" || *w.TotalMs != 75.742 || w.StagesMs[5] != 52.257 || *w.SampleRate != 66 {
		t.Fatalf("%+v", w)
	}
	for _, give := range []string{`{"x":1}`, `{"model":"a\u0062"}`, `{"total_ms":-1}`, strings.Replace(fastSeed, `"exec"`, `"exek"`, 1)} {
		if p.parse([]byte(give), &w) {
			t.Errorf("fast parser accepted %s", give)
		}
	}
}

// BenchmarkSampleDecode measures the Go side of sample ingest per record:
// framing, the fast parser and validation (no database).
func BenchmarkSampleDecode(b *testing.B) {
	var body []byte
	for i := 0; i < 5000; i++ {
		body = append(body, strings.Replace(fastSeed, "000000017", strconv.Itoa(1000000+i), 1)...)
		body = append(body, '\n')
	}
	lim := Limits{MaxAge: 100 * 365 * 24 * time.Hour, MaxFuture: time.Hour}
	now := time.Now()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rr := newRecordReader(bytes.NewReader(body), 1<<20, 1<<30, DefaultMaxRecordBytes)
		p := sampleParser{intern: map[string]string{}}
		var w wire.Sample
		var x correlate.Sample
		for {
			raw, line, err := rr.next()
			if err == io.EOF {
				break
			}
			if err != nil || !p.parse(raw, &w) {
				b.Fatal("decode failed", err)
			}
			if err := checkSample(&w, line, lim, now, &x); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*5000), "ns/record")
}
