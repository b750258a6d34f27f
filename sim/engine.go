package sim

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/waterline-dev/waterline/correlate"
)

// run simulates every request of the window once. Models are independent
// (their own replicas, their own random stream), so they run in parallel
// and the result does not depend on scheduling.
func (f *Fleet) run() {
	f.once.Do(func() {
		for _, p := range f.pods {
			p.agg = newPodAgg(f.nSteps)
		}
		out := make([]modelResult, len(f.models))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		for i, m := range f.models {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				e := newEngine(f, m)
				e.simulate()
				out[i] = e.res
			}()
		}
		wg.Wait()
		f.before = make([][]float64, len(f.models))
		f.during = make([][]float64, len(f.models))
		for i, r := range out {
			f.samples = append(f.samples, r.samples...)
			f.before[i], f.during[i] = r.before, r.during
		}
		sort.Slice(f.samples, func(i, j int) bool {
			a, b := &f.samples[i], &f.samples[j]
			if a.entry != b.entry {
				return a.entry < b.entry
			}
			return a.id < b.id
		})
	})
}

// modelResult is what one model's simulation hands back besides the pods'
// aggregates.
type modelResult struct {
	samples        []sampleRec
	before, during []float64
}

// waiting is a request queued at a replica.
type waiting struct {
	arr    float64 // arrival at the replica, s
	front  [3]float64
	seq    uint64
	tenant uint8
}

// replica is one pod's dynamic batcher: a FIFO queue in front of one GPU
// model instance. A batch is dispatched when the GPU is free and either the
// queue holds a full batch or the oldest request has waited the batch
// window (Triton's max_queue_delay); a request's wait splits into queue
// (the GPU was busy) and batch_wait (the GPU was idle, filling the batch).
type replica struct {
	p         *pod
	q         []waiting
	head      int
	busyUntil float64
	lastBatch int
}

func (r *replica) pending() int { return len(r.q) - r.head }

// outstanding is what a least-request balancer sees: queued plus in flight.
func (r *replica) outstanding(t float64) int {
	n := r.pending()
	if r.busyUntil > t {
		n += r.lastBatch
	}
	return n
}

// engine simulates one model over the window.
type engine struct {
	f   *Fleet
	m   *model
	rng *rand.Rand
	res modelResult

	reps      []*replica // every pod of the model
	routable  []*replica // ready and not terminating, at now
	nextTrans float64    // when routable must be recomputed
	routeIdx  int        // routes in force
	hotIdx    int        // index in routable of the hot pod, −1 without
	hotShare  float64
	seqBase   uint64
	seq       uint64
	tick      int

	gwRho float64 // gateway utilisation in the current tick
}

func newEngine(f *Fleet, m *model) *engine {
	e := &engine{
		f:       f,
		m:       m,
		rng:     rand.New(rand.NewPCG(uint64(f.seed)^0x9e3779b97f4a7c15, uint64(m.idx)+1)),
		seqBase: mix(uint64(f.seed))&^(0xff<<56) ^ uint64(m.idx+1)<<56,
		hotIdx:  -1,
	}
	for _, p := range f.modelPods(m) {
		// The GPU starts idle: a zero busyUntil would hold the whole warm-up
		// back until the window start.
		e.reps = append(e.reps, &replica{p: p, busyUntil: math.Inf(-1)})
	}
	return e
}

// simulate generates Poisson arrivals tick by tick (the rate is constant
// within a tick) and feeds them to the replicas, then drains the queues.
func (e *engine) simulate() {
	f := e.f
	warmTicks := int(math.Ceil(warmup / f.step))
	e.nextTrans = math.Inf(-1)
	t := -float64(warmTicks) * f.step
	cum := make([]float64, len(f.tenants))
	for k := 0; k < warmTicks+f.nSteps; k++ {
		e.tick = k
		t0 := float64(k-warmTicks) * f.step
		t1 := t0 + f.step
		rates := e.m.rates[k]
		total := 0.0
		for j, r := range rates {
			total += r
			cum[j] = total
		}
		e.gwRho = f.gateway.rho[k]
		if total <= 0 {
			t = t1
			continue
		}
		for {
			// A gap that crosses the tick boundary is discarded: arrivals
			// are memoryless, so restarting at t1 with the new rate is exact.
			t += e.rng.ExpFloat64() / total
			if t >= t1 {
				t = t1
				break
			}
			u := e.rng.Float64() * total
			j := sort.SearchFloat64s(cum, u)
			if j >= len(cum) {
				j = len(cum) - 1
			}
			e.arrive(t, uint8(j))
		}
	}
	for _, r := range e.reps {
		e.advance(r, math.Inf(1))
	}
}

// arrive routes one request that reaches the model's replicas at t.
func (e *engine) arrive(t float64, tenant uint8) {
	if t >= e.nextTrans {
		e.reroute(t)
	}
	if len(e.routable) == 0 {
		return
	}
	var r *replica
	switch {
	case e.hotIdx >= 0:
		if e.rng.Float64() < e.hotShare || len(e.routable) == 1 {
			r = e.routable[e.hotIdx]
		} else {
			k := e.rng.IntN(len(e.routable) - 1)
			if k >= e.hotIdx {
				k++
			}
			r = e.routable[k]
		}
	case e.m.spec.leastReq && len(e.routable) > 1:
		// Power of two choices on outstanding requests (Envoy LEAST_REQUEST).
		a := e.rng.IntN(len(e.routable))
		b := e.rng.IntN(len(e.routable) - 1)
		if b >= a {
			b++
		}
		ra, rb := e.routable[a], e.routable[b]
		e.advance(ra, t)
		e.advance(rb, t)
		r = ra
		if rb.outstanding(t) < ra.outstanding(t) {
			r = rb
		}
	default:
		r = e.routable[e.rng.IntN(len(e.routable))]
	}
	e.advance(r, t)
	w := waiting{arr: t, tenant: tenant, seq: e.seq}
	e.seq++
	w.front = e.front()
	r.q = append(r.q, w)
	e.advance(r, t)
}

// reroute recomputes the routable replicas and the policy at t, and when
// they next change.
func (e *engine) reroute(t float64) {
	e.routable = e.routable[:0]
	next := math.Inf(1)
	for _, r := range e.reps {
		p := r.p
		if p.ready <= t && t < p.stop {
			e.routable = append(e.routable, r)
		}
		for _, x := range []float64{p.ready, p.stop} {
			if x > t && x < next {
				next = x
			}
		}
	}
	var rc *routeChange
	for i := range e.m.routes {
		c := &e.m.routes[i]
		if c.t <= t {
			rc = c
		} else if c.t < next {
			next = c.t
		}
	}
	e.hotIdx = -1
	if rc != nil && rc.hot != nil {
		for i, r := range e.routable {
			if r.p == rc.hot {
				e.hotIdx, e.hotShare = i, rc.share
			}
		}
	}
	e.nextTrans = next
}

// front draws the gateway, auth and route stages (seconds). The gateway is
// a shared queue: with probability ρ a request waits an exponential time of
// mean S/(1−ρ) (M/M/1), so its tail explodes as the gateway saturates.
func (e *engine) front() [3]float64 {
	g := lognormal(e.rng, 0.0011, 0.3)
	if e.rng.Float64() < e.gwRho {
		g += e.rng.ExpFloat64() * e.f.gateway.service / (1 - e.gwRho)
	}
	a := lognormal(e.rng, 0.0006, 0.3)
	if e.rng.Float64() < 0.01 { // token cache miss: a round trip to the IdP
		a += lognormal(e.rng, 0.006, 0.4)
	}
	return [3]float64{g, a, lognormal(e.rng, 0.0003, 0.3)}
}

// lognormal draws a value with the given median and log-spread.
func lognormal(r *rand.Rand, median, sigma float64) float64 {
	return median * math.Exp(sigma*r.NormFloat64())
}

// advance dispatches every batch of r that starts at or before t.
func (e *engine) advance(r *replica, t float64) {
	maxB := e.m.spec.maxBatch
	for r.pending() > 0 {
		oldest := r.q[r.head].arr
		var d float64
		if r.pending() >= maxB {
			d = math.Max(r.busyUntil, r.q[r.head+maxB-1].arr)
		} else {
			d = math.Max(r.busyUntil, oldest+e.windowAt(oldest))
		}
		if d > t {
			return
		}
		e.dispatch(r, d)
	}
	// Reclaim the consumed head of the queue; a replica that never drains
	// completely would otherwise keep every request it ever queued.
	if r.head > 0 && (r.head == len(r.q) || r.head >= 1024 && 2*r.head >= len(r.q)) {
		n := copy(r.q, r.q[r.head:])
		r.q, r.head = r.q[:n], 0
	}
}

// windowAt is the batch window in force at t.
func (e *engine) windowAt(t float64) float64 {
	w := e.m.window
	if len(w) == 1 {
		return w[0].v
	}
	return valueAt(w, t, w[0].v)
}

// dispatch starts a batch at d with the oldest queued requests, after
// dropping those whose queue timeout passed.
func (e *engine) dispatch(r *replica, d float64) {
	m := e.m
	for r.pending() > 0 && d-r.q[r.head].arr > m.timeout {
		w := r.q[r.head]
		r.head++
		end := w.arr + m.timeout
		busy := math.Min(math.Max(r.busyUntil-w.arr, 0), m.timeout)
		e.f.spread(r.p.agg.queue, w.arr, end, 1)
		e.finish(r, &w, [3]float64{busy, m.timeout - busy}, 0, end, statusTimeout)
	}
	n := min(r.pending(), m.spec.maxBatch)
	if n == 0 {
		return
	}
	ex := e.execTime(r.p, n, d)
	prevFree := r.busyUntil
	for i := 0; i < n; i++ {
		w := r.q[r.head+i]
		busy := math.Min(math.Max(prevFree-w.arr, 0), d-w.arr)
		e.f.spread(r.p.agg.queue, w.arr, d, 1)
		e.finish(r, &w, [3]float64{busy, d - w.arr - busy, ex}, n, d+ex, statusOK)
	}
	r.head += n
	r.busyUntil = d + ex
	r.lastBatch = n
	a := r.p.agg
	e.f.spread(a.gpuBusy, d, d+ex, 1)
	if i := e.f.counterStep(d); i >= 0 {
		a.batches[i]++
		a.items[i] += uint32(n)
	}
}

// execTime is one batch's GPU time: the batch cost curve scaled by the
// GPU's speed, the pod's version and silicon, a throttled node, a cold
// replica, lognormal noise and rare stalls (allocator, kernel launch).
func (e *engine) execTime(p *pod, n int, d float64) float64 {
	s := e.m.spec
	x := s.execBase * (1 + s.execPerItem*float64(n-1))
	x *= p.node.gpu.speed * p.speed * p.vfactor
	if lv := p.node.throttle.level(d); lv > 0 {
		x *= 1 + (p.node.slowdown-1)*lv
	}
	if p.coldAmp > 0 && d >= p.ready {
		x *= 1 + p.coldAmp*math.Exp(-(d-p.ready)/p.coldTau)
	}
	x *= math.Exp(s.execSigma * e.rng.NormFloat64())
	if e.rng.Float64() < 0.002 {
		x *= 2 + 2*e.rng.Float64()
	}
	return x
}

// Request outcomes.
const (
	statusOK uint8 = iota
	statusError
	statusTimeout
)

var statusNames = [...]string{"ok", "error", "timeout"}

// finish completes one request: w waited mid[0] (queue) + mid[1]
// (batch_wait), ran mid[2] (exec) in a batch of n, and leaves the GPU at
// gpuDone; postprocess and the downstream call follow.
func (e *engine) finish(r *replica, w *waiting, mid [3]float64, n int, gpuDone float64, st uint8) {
	f, m := e.f, e.m
	var stages [correlate.NumStages]float64
	stages[correlate.StageGateway] = w.front[0]
	stages[correlate.StageAuth] = w.front[1]
	stages[correlate.StageRoute] = w.front[2]
	stages[correlate.StageQueue] = mid[0]
	stages[correlate.StageBatchWait] = mid[1]
	nStages := 5
	done := gpuDone
	if st == statusOK {
		stages[correlate.StageExec] = mid[2]
		post := lognormal(e.rng, m.spec.post, 0.3)
		stages[correlate.StagePostprocess] = post
		done += post
		// Every completed request reports all stages; a model that does
		// not call the dependency reports a zero downstream stage.
		nStages = correlate.NumStages
		if m.spec.calls {
			ds := f.depend.draw(e.rng, done)
			if ds >= f.depend.timeout {
				ds, st = f.depend.timeout, statusError
			}
			stages[correlate.StageDownstream] = ds
			done += ds
		}
		if st == statusOK && e.rng.Float64() < 0.0005 {
			st = statusError
		}
	}
	total := 0.0
	for _, v := range stages {
		total += v
	}
	entry := w.arr - w.front[0] - w.front[1] - w.front[2]
	a := r.p.agg
	if i := f.counterStep(done); i >= 0 {
		a.buckets[i*nBuckets+bucketOf(total)]++
		a.sum[i] += total
		for s := 0; s < nStages; s++ {
			a.stageSum[s][i] += stages[s]
			a.stageCnt[s][i]++
		}
		a.cpu[i] += m.spec.cpuPerReq
		a.rx[i] += m.spec.payload
	}
	if entry < 0 || done > f.stepTime(f.nSteps-1) {
		return
	}
	id := mix(e.seqBase ^ w.seq)
	if ms := f.measured; ms.from0 < ms.to1 && (m.measured || r.p.measured) {
		switch {
		case entry >= ms.from0 && entry < ms.to0:
			e.res.before = append(e.res.before, total)
		case entry >= ms.from1 && entry < ms.to1:
			e.res.during = append(e.res.during, total)
		}
	}
	every := m.headEvery
	if total > m.spec.slo {
		every = m.tailEvery
	}
	if mix(id)%uint64(every) != 0 {
		return
	}
	rec := sampleRec{
		entry:  entry,
		id:     id,
		pod:    int32(r.p.idx),
		tenant: w.tenant,
		batch:  uint8(n),
		status: st,
		rate:   uint32(every),
		nst:    uint8(nStages),
	}
	for s, v := range stages {
		rec.stages[s] = float32(v * 1000)
	}
	e.res.samples = append(e.res.samples, rec)
}
