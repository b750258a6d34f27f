package sim

import (
	"bufio"
	"encoding/json"
	"io"
	"iter"
	"math"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// sampleRec is one kept request, compact (a 3 h fleet keeps ~10⁵ of them).
type sampleRec struct {
	entry  float64 // gateway entry, s from the window start
	id     uint64
	stages [correlate.NumStages]float32 // ms
	pod    int32
	rate   uint32
	tenant uint8
	batch  uint8
	status uint8
	nst    uint8 // stages reported: 5 for a request that timed out in the queue
}

// SampleCount returns the number of kept request samples.
func (f *Fleet) SampleCount() int {
	f.run()
	return len(f.samples)
}

// Samples yields the kept request samples in time order: a head sample of
// the requests within the model's SLO (1 in N) and a denser tail sample of
// those over it, each with SampleRate = the N it was kept at, so weighted
// counts are unbiased. A request that timed out in the queue reports no
// exec, postprocess or downstream stage (NaN).
func (f *Fleet) Samples() iter.Seq[correlate.Sample] {
	f.run()
	return func(yield func(correlate.Sample) bool) {
		for i := range f.samples {
			if !yield(f.sample(&f.samples[i])) {
				return
			}
		}
	}
}

func (f *Fleet) sample(s *sampleRec) correlate.Sample {
	p := f.pods[s.pod]
	out := correlate.Sample{
		RequestID:  requestID(s.id),
		Time:       f.at(s.entry),
		Model:      p.model.spec.name,
		Version:    p.version,
		Tenant:     f.tenants[s.tenant],
		Replica:    p.name,
		Node:       p.node.name,
		Entry:      p.model.spec.entry,
		BatchSize:  int(s.batch),
		Status:     statusNames[s.status],
		SampleRate: float64(s.rate),
	}
	for i := range out.StagesMs {
		if i < int(s.nst) {
			v := round3(float64(s.stages[i]))
			out.StagesMs[i] = v
			out.TotalMs += v
		} else {
			out.StagesMs[i] = math.NaN()
		}
	}
	out.TotalMs = round3(out.TotalMs)
	return out
}

// requestID renders a sample id like a W3C trace id's lower half.
func requestID(id uint64) string {
	const hexd = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = hexd[id&15]
		id >>= 4
	}
	return string(b[:])
}

// WriteSamplesNDJSON writes the samples in the API's wire format
// (wire.Sample), one JSON object per line, in time order, and returns how
// many it wrote.
func (f *Fleet) WriteSamplesNDJSON(w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	n := 0
	for s := range f.Samples() {
		if err := enc.Encode(wire.NewSample(s)); err != nil {
			return n, err
		}
		n++
	}
	return n, bw.Flush()
}
