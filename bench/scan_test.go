package bench

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// BenchmarkScanSamples reads a million samples through store.ScanSamples
// (binary rows, hand-decoded, interned dimensions) and, as the floor, the
// same rows as a binary COPY TO thrown away undecoded.
func BenchmarkScanSamples(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	st := store.New(pool)
	const n = 1_000_000
	base := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)
	i := 0
	if _, _, err := st.InsertSampleStream(ctx, func(x *correlate.Sample) error {
		if i == n {
			return io.EOF
		}
		*x = correlate.Sample{RequestID: "r" + itoa(i), Time: base.Add(time.Duration(i) * 50 * time.Millisecond),
			Model: "m" + itoa(i%5), Version: "v1", Tenant: "t" + itoa(i%9), Replica: "rep-" + itoa(i%40), Node: "n" + itoa(i%8),
			Entry: "/e", BatchSize: i % 8, Status: "ok", TotalMs: float64(i % 1000), SampleRate: 1}
		for k := range x.StagesMs {
			x.StagesMs[k] = float64(k)
		}
		x.StagesMs[correlate.StageDownstream] = math.NaN()
		i++
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	f := store.SampleFilter{From: base, To: base.Add(24 * time.Hour)}
	b.Run("ScanSamples", func(b *testing.B) {
		for b.Loop() {
			rows := 0
			if err := st.ScanSamples(ctx, f, func(*correlate.Sample) error { rows++; return nil }); err != nil {
				b.Fatal(err)
			}
			if rows != n {
				b.Fatalf("%d rows", rows)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("CopyToDiscard", func(b *testing.B) {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Release()
		for b.Loop() {
			if _, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, `COPY (SELECT * FROM samples WHERE time >= '`+
				f.From.Format(time.RFC3339)+`' AND time < '`+f.To.Format(time.RFC3339)+`' ORDER BY time, request_id) TO STDOUT BINARY`); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	})
}

func itoa(i int) string {
	var b [20]byte
	p := len(b)
	for {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[p:])
		}
	}
}
