package sim

import (
	"math"
	"strconv"

	"github.com/waterline-dev/waterline/correlate"
)

// podLabels are the model server's own labels (DESIGN §6), as a
// Prometheus Kubernetes pod scrape would attach them.
func podLabels(p *pod) []byte {
	return labelSet("model", p.model.spec.name, "version", p.version, "pod", p.name, "node", p.node.name, "namespace", namespace)
}

// serverSteps is the scrape range in which p's model server exports: from
// a few seconds after the container starts until the pod is deleted.
func (f *Fleet) serverSteps(p *pod) (int, int) { return f.stepRange(p.created+3, p.gone) }

// warmScale is the factor that turns the warm-up's counts into everything
// the pod counted since it became ready, for counters that do not start at
// zero at the window start.
func (f *Fleet) warmScale(p *pod) float64 {
	if p.ready >= -warmup {
		return 1
	}
	return -p.ready / warmup
}

// leLabels are the rendered le="…" labels, canonical OpenMetrics floats.
var leLabels = func() []string {
	out := make([]string, 0, len(bounds)+1)
	for _, b := range bounds {
		s := strconv.FormatFloat(b, 'f', -1, 64)
		if math.Trunc(b) == b {
			s += ".0"
		}
		out = append(out, `le="`+s+`"`)
	}
	return append(out, `le="+Inf"`)
}()

func (o *omWriter) writeInference() {
	f := o.f
	var v valBuf

	o.family("inference_request_duration_seconds", "histogram", "End-to-end inference request latency, gateway entry to response.")
	for _, p := range f.pods {
		first, last := f.serverSteps(p)
		if first > last {
			continue
		}
		o.seriesDone()
		if o.skip() {
			continue
		}
		lab, a, scale := podLabels(p), p.agg, f.warmScale(p)
		cum := make([]uint64, nBuckets)
		sum := 0.0
		for i := 0; i <= last; i++ {
			row := a.buckets[i*nBuckets : (i+1)*nBuckets]
			for b, c := range row {
				if i == 0 {
					cum[b] += uint64(math.Round(float64(c) * scale))
				} else {
					cum[b] += uint64(c)
				}
			}
			if i == 0 {
				sum += a.sum[0] * scale
			} else {
				sum += a.sum[i]
			}
			if i < first {
				continue
			}
			var run uint64
			for b := range cum {
				run += cum[b]
				o.sample("inference_request_duration_seconds_bucket", lab, leLabels[b], v.uint(run), i)
			}
			o.sample("inference_request_duration_seconds_count", lab, "", v.uint(run), i)
			o.sample("inference_request_duration_seconds_sum", lab, "", v.float(sum, 6), i)
		}
	}

	o.family("inference_stage_duration_seconds", "summary", "Time spent per request stage.")
	names := correlate.StageNames()
	for _, p := range f.pods {
		first, last := f.serverSteps(p)
		if first > last {
			continue
		}
		lab, a, scale := podLabels(p), p.agg, f.warmScale(p)
		for s := range names {
			o.seriesDone()
			if o.skip() {
				continue
			}
			stage := `stage="` + names[s] + `"`
			var cnt uint64
			sum := 0.0
			for i := 0; i <= last; i++ {
				if i == 0 {
					cnt += uint64(math.Round(float64(a.stageCnt[s][0]) * scale))
					sum += a.stageSum[s][0] * scale
				} else {
					cnt += uint64(a.stageCnt[s][i])
					sum += a.stageSum[s][i]
				}
				if i < first {
					continue
				}
				o.sample("inference_stage_duration_seconds_count", lab, stage, v.uint(cnt), i)
				o.sample("inference_stage_duration_seconds_sum", lab, stage, v.float(sum, 6), i)
			}
		}
	}

	o.family("inference_batches", "counter", "Batches executed by the model server.")
	for _, p := range f.pods {
		first, last := f.serverSteps(p)
		if first > last {
			continue
		}
		o.seriesDone()
		if o.skip() {
			continue
		}
		lab, a := podLabels(p), p.agg
		var cnt uint64
		for i := 0; i <= last; i++ {
			if i == 0 {
				cnt += uint64(math.Round(float64(a.batches[0]) * f.warmScale(p)))
			} else {
				cnt += uint64(a.batches[i])
			}
			if i >= first {
				o.sample("inference_batches_total", lab, "", v.uint(cnt), i)
			}
		}
	}

	o.family("inference_queue_size", "gauge", "Requests waiting in the model server's queue (mean over the scrape interval).")
	for _, p := range f.pods {
		first, last := f.serverSteps(p)
		if first > last {
			continue
		}
		o.seriesDone()
		if o.skip() {
			continue
		}
		lab := podLabels(p)
		for i := first; i <= last; i++ {
			o.sample("inference_queue_size", lab, "", v.float(p.agg.queue[i]/f.step, 2), i)
		}
	}
}
