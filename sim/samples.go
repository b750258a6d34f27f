package sim

import (
	"bufio"
	"io"
	"iter"
	"math"
	"strconv"

	"github.com/waterline-dev/waterline/correlate"
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

// WriteSamplesNDJSON writes the samples in DESIGN §5's wire format, one
// JSON object per line, in time order, and returns how many it wrote.
func (f *Fleet) WriteSamplesNDJSON(w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	names := correlate.StageNames()
	n := 0
	for s := range f.Samples() {
		buf = appendSampleJSON(buf[:0], &s, names)
		if _, err := bw.Write(buf); err != nil {
			return n, err
		}
		n++
	}
	return n, bw.Flush()
}

// appendSampleJSON renders one sample line. Hand-written rather than
// encoding/json because it runs 10⁵ times per bundle and every field is
// known; stages that were not reported are left out of stages_ms.
func appendSampleJSON(b []byte, s *correlate.Sample, stageNames []string) []byte {
	str := func(b []byte, k, v string) []byte {
		b = append(b, ',', '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		return strconv.AppendQuote(b, v)
	}
	b = append(b, `{"request_id":`...)
	b = strconv.AppendQuote(b, s.RequestID)
	b = append(b, `,"time":"`...)
	b = s.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, '"')
	b = str(b, "model", s.Model)
	b = str(b, "version", s.Version)
	b = str(b, "tenant", s.Tenant)
	b = str(b, "replica", s.Replica)
	b = str(b, "node", s.Node)
	b = str(b, "entry", s.Entry)
	if s.BatchSize > 0 {
		b = append(b, `,"batch_size":`...)
		b = strconv.AppendInt(b, int64(s.BatchSize), 10)
	}
	b = str(b, "status", s.Status)
	b = append(b, `,"total_ms":`...)
	b = strconv.AppendFloat(b, s.TotalMs, 'f', -1, 64)
	b = append(b, `,"stages_ms":{`...)
	first := true
	for i, v := range s.StagesMs {
		if math.IsNaN(v) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, stageNames[i]...)
		b = append(b, '"', ':')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	b = append(b, `},"sample_rate":`...)
	b = strconv.AppendFloat(b, s.SampleRate, 'f', -1, 64)
	return append(b, '}', '\n')
}
