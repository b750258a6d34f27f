package sim

import (
	"fmt"
	"math"
)

// nodeLoad is one node's per-scrape host usage, derived from its pods.
type nodeLoad struct {
	busy []float64 // CPU-seconds of work in the interval ending at scrape i
	load []float64 // of which loading model weights (shows as iowait)
	rx   []float64 // bytes received in the interval
	used []float64 // bytes of memory in use at scrape i
}

// nodeLoads derives every node's CPU, network and memory from what its
// pods did: a base for the OS and daemons, a serving process per pod, the
// CPU of request handling, request payloads, and weight downloads while a
// pod loads.
func (f *Fleet) nodeLoads() []nodeLoad {
	out := make([]nodeLoad, len(f.nodes))
	for k, n := range f.nodes {
		l := nodeLoad{
			busy: make([]float64, f.nSteps), load: make([]float64, f.nSteps),
			rx: make([]float64, f.nSteps), used: make([]float64, f.nSteps),
		}
		for i := range l.busy {
			l.busy[i] = 0.6 * f.step
			l.rx[i] = 180e3 * f.step
			l.used[i] = 24 << 30
		}
		for _, p := range f.pods {
			if p.node != n {
				continue
			}
			sp := p.model.spec
			loadEnd := p.created + sp.loadSecs
			for i := 0; i < f.nSteps; i++ {
				t1 := f.stepTime(i)
				t0 := t1 - f.step
				alive := math.Max(0, math.Min(t1, p.gone)-math.Max(t0, p.created))
				if alive <= 0 {
					continue
				}
				loading := math.Max(0, math.Min(t1, loadEnd)-math.Max(t0, p.created))
				l.busy[i] += 0.4*alive + 2.5*loading + p.agg.cpu[i]
				l.load[i] += 2.5 * loading
				l.rx[i] += p.agg.rx[i] + sp.weightsMiB*(1<<20)*1.05*loading/sp.loadSecs
				if p.created <= t1 && t1 < p.gone {
					l.used[i] += 4<<30 + sp.weightsMiB*(1<<20)*math.Min(1, (t1-p.created)/sp.loadSecs)
				}
			}
		}
		out[k] = l
	}
	return out
}

// cpuModes are the node_exporter modes written, with their share of busy
// time (idle is the rest).
var cpuModes = []struct {
	name  string
	share float64
}{{"user", 0.74}, {"system", 0.2}, {"iowait", 0.06}}

func (o *omWriter) writeNode() {
	f := o.f
	var loads []nodeLoad
	if !o.counting {
		loads = f.nodeLoads()
	}
	var v valBuf

	o.family("node_cpu_seconds", "counter", "Seconds the CPUs spent in each mode.")
	for k, n := range f.nodes {
		for c := 0; c < n.gpu.cpus; c++ {
			for _, mode := range append([]string{"idle"}, "user", "system", "iowait") {
				o.seriesDone()
				if o.skip() {
					continue
				}
				lab := labelSet("node", n.name, "cpu", fmt.Sprint(c), "mode", mode)
				key := uint64(n.idx)<<20 | uint64(c)
				total := 0.0
				for i := 0; i < f.nSteps; i++ {
					d := f.cpuModeSeconds(&loads[k], n, c, key, mode, i)
					if i == 0 {
						// Counters since boot: the node ran about this busy.
						d *= n.bootAge / f.step
					}
					total += d
					o.sample("node_cpu_seconds_total", lab, "", v.float(total, 2), i)
				}
			}
		}
	}

	o.family("node_memory_MemAvailable_bytes", "gauge", "Memory information field MemAvailable_bytes.")
	for k, n := range f.nodes {
		o.seriesDone()
		if o.skip() {
			continue
		}
		lab := labelSet("node", n.name)
		tot := n.gpu.memGiB * (1 << 30)
		for i := 0; i < f.nSteps; i++ {
			avail := tot - loads[k].used[i] - (2<<30)*f.noise(uint64(n.idx)+91, i)
			o.sample("node_memory_MemAvailable_bytes", lab, "", v.float(math.Max(avail, 0.05*tot), 0), i)
		}
	}
	o.family("node_memory_MemTotal_bytes", "gauge", "Memory information field MemTotal_bytes.")
	for _, n := range f.nodes {
		o.seriesDone()
		if o.skip() {
			continue
		}
		lab := labelSet("node", n.name)
		val := v.float(n.gpu.memGiB*(1<<30), 0)
		for i := 0; i < f.nSteps; i++ {
			o.sample("node_memory_MemTotal_bytes", lab, "", val, i)
		}
	}

	o.family("node_network_receive_bytes", "counter", "Network device statistic receive_bytes.")
	for k, n := range f.nodes {
		o.seriesDone()
		if o.skip() {
			continue
		}
		lab := labelSet("node", n.name, "device", "eth0")
		total := 0.0
		for i := 0; i < f.nSteps; i++ {
			d := loads[k].rx[i] * (0.97 + 0.06*f.noise(uint64(n.idx)+17, i))
			if i == 0 {
				d *= n.bootAge / f.step
			}
			total += d
			o.sample("node_network_receive_bytes_total", lab, "", v.float(total, 0), i)
		}
	}
}

// cpuModeSeconds is how long CPU c of n spent in mode during the interval
// ending at scrape i. The node's busy time is spread unevenly over its CPUs
// (the same jitter for every mode of a CPU, so the modes add up to the
// interval).
func (f *Fleet) cpuModeSeconds(l *nodeLoad, n *node, c int, key uint64, mode string, i int) float64 {
	share := (0.7 + 0.6*f.noise(key, i)) / float64(n.gpu.cpus)
	busy := math.Min(f.step*0.98, l.busy[i]*share)
	io := math.Min(busy, l.load[i]*share*0.5)
	switch mode {
	case "idle":
		return f.step - busy
	case "iowait":
		return (busy-io)*cpuModes[2].share + io
	case "user":
		return (busy - io) * cpuModes[0].share
	default:
		return (busy - io) * cpuModes[1].share
	}
}
