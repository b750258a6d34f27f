package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// livePods returns m's pods that exist at t and are not terminating.
func (f *Fleet) livePods(m *model, t float64) []*pod {
	var out []*pod
	for _, p := range f.pods {
		if p.model == m && p.created <= t && t < p.stop {
			out = append(out, p)
		}
	}
	return out
}

// versionAt is the version m's newest live pods run at t.
func (f *Fleet) versionAt(m *model, t float64) string {
	v := m.version
	for _, p := range f.livePods(m, t) {
		v = p.version
	}
	return v
}

// newPod creates a pod of m's ReplicaSet for ver, started at t, and
// schedules it on a free GPU.
func (f *Fleet) newPod(r *rand.Rand, m *model, ver string, t float64) (*pod, error) {
	rs := replicaSetName(f.seed, m.spec.name, ver)
	n := 0
	for _, q := range f.pods {
		if q.rs == rs {
			n++
		}
	}
	p := &pod{
		model: m, rs: rs, version: ver, name: podName(f.seed, rs, n+100),
		created: t, ready: t + m.spec.loadSecs*(0.9+0.2*r.Float64()),
		stop: inf, gone: inf, vfactor: 1,
	}
	if err := f.schedule(p, r); err != nil {
		return nil, err
	}
	f.pods = append(f.pods, p)
	return p, nil
}

// terminate takes p out of routing at t; it is deleted after a 30 s grace
// period, when its GPU frees up.
func (f *Fleet) terminate(p *pod, t float64) {
	p.stop, p.gone = t, t+30
	f.releaseGPU(p, p.gone)
}

// rollout replaces m's live pods by pods of version ver one at a time
// (RollingUpdate, maxSurge 1, maxUnavailable 0): each new pod is created
// when the previous one is ready, and an old pod leaves as each new one
// becomes ready. New pods run exec × vfactor. It bumps the deployment's
// generation at t and returns the new pods (first one first).
func (f *Fleet) rollout(r *rand.Rand, m *model, ver string, t, vfactor float64) ([]*pod, error) {
	old := f.livePods(m, t)
	m.generation = append(m.generation, stepValue{t: t, v: valueAt(m.generation, t, 1) + 1})
	var out []*pod
	at := t + 2 + 3*r.Float64() // the controller reacts, the scheduler binds
	for _, op := range old {
		p, err := f.newPod(r, m, ver, at)
		if err != nil {
			return nil, err
		}
		p.vfactor = vfactor
		// A readiness probe that includes a warm-up request: a small
		// residual penalty fading within a minute.
		p.coldAmp, p.coldTau = 0.15, 20
		f.terminate(op, p.ready)
		out = append(out, p)
		at = p.ready + 1
	}
	return out, nil
}

// scaleUp adds k pods to m at t: the HPA's desired replicas change first,
// the deployment's spec follows, the pods start a few seconds apart. A
// cold pod passes its readiness probe as soon as the server listens, long
// before its weights are resident and its kernels compiled, so its first
// minutes run exec × (1 + coldAmp·e^(−age/τ)); a warm one (pre-warmed pool,
// a proper probe) is ready only after loading and runs at full speed.
func (f *Fleet) scaleUp(r *rand.Rand, m *model, t float64, k int, coldAmp, tau float64) ([]*pod, error) {
	cur := valueAt(m.spec2, t, float64(m.replicas))
	m.hpa = append(m.hpa, stepValue{t: t - 15, v: cur + float64(k)})
	m.spec2 = append(m.spec2, stepValue{t: t, v: cur + float64(k)})
	ver := f.versionAt(m, t)
	var out []*pod
	for i := 0; i < k; i++ {
		p, err := f.newPod(r, m, ver, t+2+4*float64(i)+2*r.Float64())
		if err != nil {
			return nil, err
		}
		if coldAmp > 0 {
			p.ready = p.created + 12 + 6*r.Float64()
			p.coldAmp, p.coldTau = coldAmp, tau
		}
		out = append(out, p)
	}
	return out, nil
}

// bumpVersion returns the next minor version of v ("v1.4.2" → "v1.5.0").
func bumpVersion(v string) string {
	var a, b, c int
	if _, err := fmt.Sscanf(v, "v%d.%d.%d", &a, &b, &c); err != nil {
		return v + "-next"
	}
	return version(a, b+1, 0)
}

// bumpPatch returns the next patch version of v ("v1.4.2" → "v1.4.3").
func bumpPatch(v string) string {
	var a, b, c int
	if _, err := fmt.Sscanf(v, "v%d.%d.%d", &a, &b, &c); err != nil {
		return v + "-p"
	}
	return version(a, b, c+1)
}

// coldRecovery is when a cold pod's penalty falls under 10 %.
func coldRecovery(p *pod) float64 {
	if p.coldAmp <= 0.1 {
		return p.ready
	}
	return p.ready + p.coldTau*math.Log(p.coldAmp/0.1)
}
