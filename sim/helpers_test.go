package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// outputs are a fleet's raw outputs, as a consumer receives them.
type outputs struct {
	fleet   *Fleet
	om      []byte
	samples []correlate.Sample // as a consumer decodes the NDJSON
	ndjson  []byte
	events  []correlate.Event
	truth   Truth
	desc    Description
}

var (
	genMu    sync.Mutex
	genCache = map[string]*outputs{}
)

// generate builds a fleet and renders its outputs, cached per options so
// several tests can read the same fleet.
func generate(t testing.TB, o Options) *outputs {
	t.Helper()
	key, _ := json.Marshal(o)
	genMu.Lock()
	defer genMu.Unlock()
	if out, ok := genCache[string(key)]; ok {
		return out
	}
	f, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var om, nd bytes.Buffer
	if err := f.WriteOpenMetrics(&om, nil); err != nil {
		t.Fatalf("WriteOpenMetrics: %v", err)
	}
	if _, err := f.WriteSamplesNDJSON(&nd); err != nil {
		t.Fatalf("WriteSamplesNDJSON: %v", err)
	}
	out := &outputs{fleet: f, om: om.Bytes(), ndjson: nd.Bytes(), events: f.Events(), truth: f.Truth(), desc: f.Description()}
	sc := bufio.NewScanner(bytes.NewReader(nd.Bytes()))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		s, err := wire.DecodeSample(sc.Bytes())
		if err != nil {
			t.Fatalf("sample %q: %v", sc.Text(), err)
		}
		out.samples = append(out.samples, s)
	}
	genCache[string(key)] = out
	return out
}

// window bounds of a fleet's scrapes in Unix seconds.
func (o *outputs) window() (int64, int64) {
	return o.desc.Start.Unix(), o.desc.End.Unix()
}

// metrics parses the OpenMetrics output, keeping the named samples.
func (o *outputs) metrics(t testing.TB, names ...string) *omFile {
	t.Helper()
	from, to := o.window()
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	m, err := checkOpenMetrics(o.om, from, to, func(n string) bool { return keep[n] })
	if err != nil {
		t.Fatalf("OpenMetrics: %v", err)
	}
	return m
}

// sel returns the samples that pass keep.
func (o *outputs) sel(keep func(*correlate.Sample) bool) []*correlate.Sample {
	var out []*correlate.Sample
	for i := range o.samples {
		if keep(&o.samples[i]) {
			out = append(out, &o.samples[i])
		}
	}
	return out
}

// between selects samples whose time is in [from, to).
func between(from, to time.Time) func(*correlate.Sample) bool {
	return func(s *correlate.Sample) bool { return !s.Time.Before(from) && s.Time.Before(to) }
}

func and(fs ...func(*correlate.Sample) bool) func(*correlate.Sample) bool {
	return func(s *correlate.Sample) bool {
		for _, f := range fs {
			if !f(s) {
				return false
			}
		}
		return true
	}
}

// wQuantile is the sample_rate-weighted q-quantile of a stage ("total" for
// the end-to-end time).
func wQuantile(ss []*correlate.Sample, stage string, q float64) float64 {
	type vw struct{ v, w float64 }
	var xs []vw
	tot := 0.0
	for _, s := range ss {
		v := s.TotalMs
		if stage != "total" {
			x, ok := stageMs(s, stage)
			if !ok {
				continue
			}
			v = x
		}
		xs = append(xs, vw{v, s.SampleRate})
		tot += s.SampleRate
	}
	if len(xs) == 0 {
		return 0
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v < xs[j].v })
	acc := 0.0
	for _, x := range xs {
		acc += x.w
		if acc >= q*tot {
			return x.v
		}
	}
	return xs[len(xs)-1].v
}

// wMean is the sample_rate-weighted mean of a stage.
func wMean(ss []*correlate.Sample, stage string) float64 {
	sum, w := 0.0, 0.0
	for _, s := range ss {
		if v, ok := stageMs(s, stage); ok {
			sum += v * s.SampleRate
			w += s.SampleRate
		}
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// onset is the truth's onset, or the middle of the window's last third
// for none.
func (o *outputs) onset() time.Time {
	if o.truth.Onset != nil {
		return *o.truth.Onset
	}
	return o.desc.Start.Add(o.fleet.opts.Onset)
}

// stageMs is a sample's time in the named stage; ok is false when the
// sample did not report it.
func stageMs(s *correlate.Sample, name string) (float64, bool) {
	st, ok := correlate.ParseStage(name)
	if !ok || math.IsNaN(s.StagesMs[st]) {
		return 0, false
	}
	return s.StagesMs[st], true
}
