package sim

import (
	"io"
	"testing"
)

// BenchmarkDefaultFleet generates the 3 h default fleet end to end: the
// request simulation, the OpenMetrics text and the samples. Run with
// -benchtime=1x on a shared box.
func BenchmarkDefaultFleet(b *testing.B) {
	for i := 0; i < b.N; i++ {
		f, err := New(Options{Seed: int64(i), Scenario: Release, Confounders: true})
		if err != nil {
			b.Fatal(err)
		}
		cw := &countingWriter{}
		if err := f.WriteOpenMetrics(cw, nil); err != nil {
			b.Fatal(err)
		}
		n, err := f.WriteSamplesNDJSON(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cw.n)/1e6, "MB-metrics/op")
		b.ReportMetric(float64(n), "samples/op")
	}
}

// BenchmarkSmallFleet is the fixture other packages' tests use.
func BenchmarkSmallFleet(b *testing.B) {
	for i := 0; i < b.N; i++ {
		f, err := New(Small(int64(i), ColdStart))
		if err != nil {
			b.Fatal(err)
		}
		if err := f.WriteOpenMetrics(io.Discard, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteSamplesNDJSON(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
