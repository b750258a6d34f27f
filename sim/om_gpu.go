package sim

import (
	"fmt"
	"math"
)

// gpuCtxMiB is what a CUDA context takes before any weights.
const gpuCtxMiB = 600

// gpuSeries is one DCGM label set: a GPU with the pod using it, or with no
// pod (idle), and the scrapes at which that label set applies.
type gpuSeries struct {
	n      *node
	gpu    int
	p      *pod // nil when idle
	labels []byte
	steps  []int
}

// gpuSeriesList lays out the DCGM series: dcgm-exporter attaches pod,
// namespace and container only while a pod holds the GPU, so a GPU that
// changes hands mid-window shows up as several series.
func (f *Fleet) gpuSeriesList() []gpuSeries {
	var out []gpuSeries
	for _, n := range f.nodes {
		for g := 0; g < gpusPerNode; g++ {
			base := []string{"gpu", fmt.Sprint(g), "UUID", n.gpuUUIDs[g], "device", fmt.Sprintf("nvidia%d", g),
				"modelName", n.gpu.name, "Hostname", n.name}
			owner := make([]*pod, f.nSteps)
			var users []*pod
			for _, p := range f.pods {
				if p.node != n || p.gpu != g {
					continue
				}
				first, last := f.stepRange(p.created, p.gone)
				for i := first; i <= last; i++ {
					owner[i] = p
				}
				if first <= last {
					users = append(users, p)
				}
			}
			idle := gpuSeries{n: n, gpu: g, labels: labelSet(base...)}
			for i, p := range owner {
				if p == nil {
					idle.steps = append(idle.steps, i)
				}
			}
			if len(idle.steps) > 0 {
				out = append(out, idle)
			}
			for _, p := range users {
				s := gpuSeries{n: n, gpu: g, p: p,
					labels: labelSet(append(base, "pod", p.name, "namespace", namespace, "container", "model-server")...)}
				for i, q := range owner {
					if q == p {
						s.steps = append(s.steps, i)
					}
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// gpuUtil is DCGM's GPU_UTIL for the series at scrape i: the share of the
// interval a kernel ran, in whole percent. Loading a model keeps the GPU
// mostly idle.
func (f *Fleet) gpuUtil(s *gpuSeries, i int) float64 {
	p := s.p
	if p == nil {
		return 0
	}
	t := f.stepTime(i)
	key := uint64(p.idx)*131 + 7
	if t < p.ready {
		return math.Round(2 + 8*f.noise(key, i))
	}
	u := 100 * p.agg.gpuBusy[i] / f.step
	return math.Round(math.Min(100, math.Max(0, u+1+f.noise(key, i))))
}

// gpuUsed is DCGM's FB_USED in MiB: the context, the weights as they page
// in, the allocator's cached arena and the live batch's activations.
func (f *Fleet) gpuUsed(s *gpuSeries, i int) float64 {
	p := s.p
	if p == nil {
		return 0
	}
	sp := p.model.spec
	t := f.stepTime(i)
	progress := math.Min(1, math.Max(0, (t-p.created)/sp.loadSecs))
	used := gpuCtxMiB + sp.weightsMiB*progress
	if t >= p.ready {
		a := p.agg
		avg := 0.0
		if a.batches[i] > 0 {
			avg = float64(a.items[i]) / float64(a.batches[i])
		}
		used += sp.actMiB * (0.5*float64(sp.maxBatch) + 0.5*avg)
	}
	used += 40 * f.noise(uint64(p.idx)*977+3, i)
	return math.Round(math.Min(used, s.n.gpu.memMiB))
}

func (o *omWriter) writeGPU() {
	f := o.f
	list := f.gpuSeriesList()
	var v valBuf
	type metric struct {
		name, help string
		val        func(*gpuSeries, int) float64
	}
	metrics := []metric{
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", f.gpuUtil},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", f.gpuUsed},
		{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", func(s *gpuSeries, i int) float64 {
			return s.n.gpu.memMiB - f.gpuUsed(s, i)
		}},
	}
	for _, m := range metrics {
		o.family(m.name, "gauge", m.help)
		for k := range list {
			s := &list[k]
			o.seriesDone()
			if o.skip() {
				continue
			}
			for _, i := range s.steps {
				o.sample(m.name, s.labels, "", v.float(m.val(s, i), 0), i)
			}
		}
	}
}
