package sim

import (
	"math"
	"math/rand/v2"
)

// diurnal is the time-of-day traffic multiplier: a daily sine peaking in the
// early afternoon UTC, ±20 %. Over a 3 h window it is a slow drift that any
// detector has to tolerate.
func diurnal(hourUTC float64) float64 {
	return 1 + 0.2*math.Sin(2*math.Pi*(hourUTC-8)/24)
}

// hourAt is the UTC hour of day (fractional) at t seconds from the start.
func (f *Fleet) hourAt(t float64) float64 {
	s := f.opts.Start
	h := float64(s.Hour()) + float64(s.Minute())/60 + float64(s.Second())/3600
	return math.Mod(h+t/3600, 24)
}

// nominalRate is a model's mean request rate at t without noise or surge.
func (f *Fleet) nominalRate(m *model, t float64) float64 {
	return m.spec.rps * f.opts.TrafficScale * diurnal(f.hourAt(t))
}

// planTraffic fixes every model's per-tenant request rate for every tick,
// from the warm-up on: the diurnal curve, slow mean-reverting noise per
// model and per tenant (an AR(1) on the log rate with a 10 min memory), and
// a capacity surge where one was injected.
func (f *Fleet) planTraffic(r *rand.Rand) {
	warmTicks := int(math.Ceil(warmup / f.step))
	n := warmTicks + f.nSteps
	phi := math.Exp(-f.step / 600)
	innov := math.Sqrt(1 - phi*phi)
	for _, m := range f.models {
		m.rates = make([][]float64, n)
		x := 0.06 * r.NormFloat64()
		xt := make([]float64, len(f.tenants))
		for j := range xt {
			xt[j] = 0.1 * r.NormFloat64()
		}
		for k := 0; k < n; k++ {
			t := float64(k-warmTicks) * f.step
			x = phi*x + innov*0.06*r.NormFloat64()
			base := f.nominalRate(m, t) * math.Exp(x)
			row := make([]float64, len(f.tenants))
			for j := range row {
				xt[j] = phi*xt[j] + innov*0.1*r.NormFloat64()
				row[j] = base * m.shares[j] * math.Exp(xt[j])
			}
			if lv := m.surge.level(t); lv > 0 {
				row[m.surgeTen] += m.surgeRPS * lv
			}
			m.rates[k] = row
		}
		f.setSampling(m)
	}
}

// setSampling picks the head and tail sampling rates of m: the head keeps
// about one request per second per model unless fixed by the options, and
// is a multiple of the tail rate so that a head-sampled slow request is
// always in the tail sample too.
func (f *Fleet) setSampling(m *model) {
	tail := f.opts.TailSampleEvery
	head := f.opts.HeadSampleEvery
	if head == 0 {
		head = int(math.Round(m.spec.rps * f.opts.TrafficScale))
	}
	head = max(tail, (head+tail/2)/tail*tail)
	m.headEvery, m.tailEvery = head, tail
}

// capacityPerReplica is the throughput (requests/s) one replica of m
// reaches with full batches on its GPU: the saturation point of its queue.
func capacityPerReplica(m *model, p *pod) float64 {
	s := m.spec
	full := s.execBase * (1 + s.execPerItem*float64(s.maxBatch-1)) * p.node.gpu.speed * p.speed * p.vfactor
	return float64(s.maxBatch) / full
}

// gatewayPlan is the shared ingress: its utilisation per tick (from the
// warm-up on) and the mean service time of one request.
type gatewayPlan struct {
	rho     []float64
	service float64
	cut     effect  // lost capacity (ingress)
	cutTo   float64 // utilisation the cut drives the gateway to at onset
}

// planGateway sizes the gateway for about 35 % utilisation at the mean
// load of the window and follows the fleet's total rate tick by tick.
func (f *Fleet) planGateway() {
	g := &f.gateway
	g.service = 0.004
	n := len(f.models[0].rates)
	totals := make([]float64, n)
	mean := 0.0
	for k := range totals {
		for _, m := range f.models {
			for _, v := range m.rates[k] {
				totals[k] += v
			}
		}
		mean += totals[k] / float64(n)
	}
	capacity := mean / 0.35
	cutFactor := 1.0
	if g.cut.active() {
		// The capacity left after the cut brings the gateway to cutTo at the
		// onset's load.
		k := int(math.Ceil(warmup/f.step)) + int(g.cut.from/f.step)
		k = min(max(k, 0), n-1)
		cutFactor = capacity * g.cutTo / totals[k]
	}
	g.rho = make([]float64, n)
	warmTicks := int(math.Ceil(warmup / f.step))
	for k, tot := range totals {
		t := float64(k-warmTicks) * f.step
		c := capacity
		if lv := g.cut.level(t); lv > 0 {
			c = capacity / (1 + (cutFactor-1)*lv)
		}
		g.rho[k] = math.Min(0.96, tot/c)
	}
}

// dependencyPlan is the downstream service (vector-db): a lognormal call
// latency whose median and spread grow while it is degraded, with a client
// timeout.
type dependencyPlan struct {
	median, sigma float64
	slow          effect
	mul, sigma2   float64 // median multiplier and spread at the full level
	timeout       float64
}

func (d *dependencyPlan) draw(r *rand.Rand, t float64) float64 {
	med, sig := d.median, d.sigma
	if lv := d.slow.level(t); lv > 0 {
		med *= 1 + (d.mul-1)*lv
		sig += (d.sigma2 - d.sigma) * lv
	}
	return lognormal(r, med, sig)
}
