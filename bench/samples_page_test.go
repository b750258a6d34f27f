package bench

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// BenchmarkSamplesPage is the incident page's sample table over an hour of
// 300,000 samples (40 replicas, 60,000 of them slow): the slowest 25
// (ORDER BY total_ms LIMIT, a top-N sort) against the default spread page
// (row_number over (time bucket, replica) on the key columns, then the
// page's rows by primary key), on page 1 and page 4.
func BenchmarkSamplesPage(b *testing.B) {
	ctx := context.Background()
	st := store.New(storetest.NewPool(b))
	const n = 300_000
	base := time.Date(2026, 10, 6, 7, 0, 0, 0, time.UTC)
	i := 0
	if _, _, err := st.InsertSampleStream(ctx, func(x *correlate.Sample) error {
		if i == n {
			return io.EOF
		}
		*x = correlate.Sample{RequestID: "r" + itoa(i), Time: base.Add(time.Duration(i) * 12 * time.Millisecond),
			Model: "m" + itoa(i%5), Version: "v1", Tenant: "t" + itoa(i%9), Replica: "rep-" + itoa(i%40), Node: "n" + itoa(i%8),
			Entry: "/e", BatchSize: i % 8, Status: "ok", TotalMs: float64((i * 7919) % 1000), SampleRate: 1}
		for k := range x.StagesMs {
			x.StagesMs[k] = float64(k)
		}
		i++
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	q := store.SampleQuery{From: base, To: base.Add(time.Hour), Slow: true, DefaultSlowMs: 800, Desc: true, Limit: 25}
	for _, c := range []struct {
		name   string
		spread bool
		offset int
	}{{"slowest", false, 0}, {"spread", true, 0}, {"slowest/page4", false, 75}, {"spread/page4", true, 75}} {
		b.Run(c.name, func(b *testing.B) {
			q := q
			q.Spread, q.Offset = c.spread, c.offset
			for b.Loop() {
				p, err := st.SamplesPage(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Samples) != 25 || p.Total != n/5 {
					b.Fatalf("%d rows of %d", len(p.Samples), p.Total)
				}
			}
		})
	}
}
