package pull

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
)

// podMeta is what kube-state-metrics says about a pod.
type podMeta struct{ Model, Version, Node string }

// podIndex maps a pod onto its model, version and node, by namespace and
// name ("prod/triton-0") and by name alone. A StatefulSet's pod names
// repeat in every namespace it runs in (prod and staging in one cluster):
// a name whose namespaces disagree is ambiguous, and a series that does
// not say its namespace joins none of them rather than the wrong one.
type podIndex struct {
	byNS      map[string]podMeta // "namespace/pod"
	byName    map[string]podMeta
	ambiguous map[string]bool // names several namespaces use for different pods
}

// newPodIndex indexes pods keyed "namespace/pod".
func newPodIndex(byNS map[string]podMeta) podIndex {
	idx := podIndex{byNS: byNS, byName: make(map[string]podMeta, len(byNS)), ambiguous: map[string]bool{}}
	for k, m := range byNS {
		_, name, _ := strings.Cut(k, "/")
		if old, seen := idx.byName[name]; seen && old != m {
			idx.ambiguous[name] = true
		}
		idx.byName[name] = m
	}
	return idx
}

// lookup finds the pod a series names: by its namespace when it has one,
// else by the name when that is not ambiguous.
func (idx podIndex) lookup(namespace, pod string) (podMeta, bool) {
	if namespace != "" {
		if m, ok := idx.byNS[namespace+"/"+pod]; ok {
			return m, true
		}
	}
	m, ok := idx.byName[pod]
	return m, ok && !idx.ambiguous[pod]
}

// podCache shares one pod join per window among the sources pulling it.
type podCache struct {
	mu      sync.Mutex
	entries map[window]*podEntry
}

// forget drops every join. The live loop calls it after each round: the
// next round pulls windows of its own (the cursor has moved), and joins of
// past rounds piled up to 256 windows — two hours of rounds, ~50 MB at
// 500 pods — before the map was emptied. A history pull, which pulls each
// window once per source at its own pace, keeps them.
func (c *podCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
}

type podEntry struct {
	once sync.Once
	idx  podIndex
	err  error
}

// podsFor returns the pods that existed during w (any sample of
// kube_pod_labels or kube_pod_info in it, plus the 5-minute lookback),
// from two instant queries with max_over_time over the window. Empty when
// kube-state-metrics events are off.
func (p *Puller) podsFor(ctx context.Context, w window) (podIndex, error) {
	if !p.config().Kube.Enabled {
		return podIndex{}, nil
	}
	p.pods.mu.Lock()
	if p.pods.entries == nil || len(p.pods.entries) > 256 {
		p.pods.entries = map[window]*podEntry{}
	}
	e := p.pods.entries[w]
	if e == nil {
		e = &podEntry{}
		p.pods.entries[w] = e
	}
	p.pods.mu.Unlock()
	e.once.Do(func() { e.idx, e.err = p.loadPods(ctx, w) })
	if e.err != nil {
		p.pods.mu.Lock()
		delete(p.pods.entries, w) // retry next time
		p.pods.mu.Unlock()
	}
	return e.idx, e.err
}

func (p *Puller) loadPods(ctx context.Context, w window) (podIndex, error) {
	cfg := p.config()
	k := cfg.Kube
	rng := fmt.Sprintf("%ds", int64((w.to.Sub(w.from)+5*time.Minute)/time.Second))
	labels, err := p.prom.instant(ctx, EventsSource, cfg.scoped(fmt.Sprintf(
		`max by (namespace, pod, %s) (%s)`, k.podLabels(), ksmSeries("max_over_time(kube_pod_labels["+rng+"])"))), w.to)
	if err != nil {
		return podIndex{}, err
	}
	info, err := p.prom.instant(ctx, EventsSource, cfg.scoped(fmt.Sprintf(`max by (namespace, pod, node, created_by_kind, created_by_name) (%s)`, ksmSeries("max_over_time(kube_pod_info["+rng+"])"))), w.to)
	if err != nil {
		return podIndex{}, err
	}
	byNS := map[string]podMeta{}
	// ksmSeries put the workload's namespace and pod in namespace and pod.
	key := func(s *model.Sample) string { return string(s.Metric["namespace"]) + "/" + string(s.Metric["pod"]) }
	for _, s := range labels {
		pod := key(s)
		m := byNS[pod]
		m.Model = firstLabel(s.Metric, k.ModelLabels)
		m.Version = firstLabel(s.Metric, k.VersionLabels)
		byNS[pod] = m
	}
	for _, s := range info {
		pod := key(s)
		m := byNS[pod]
		if n := string(s.Metric["node"]); n != "" {
			m.Node = n
		}
		// kube-state-metrics 2.x exports pod labels only when allowed
		// (--metric-labels-allowlist): the model is then the owner's,
		// as for deploy events.
		if m.Model == "" {
			if owner := ownerWorkload(string(s.Metric["created_by_kind"]), string(s.Metric["created_by_name"])); owner != "" {
				m.Model = p.modelOf(owner)
			}
		}
		byNS[pod] = m
	}
	return newPodIndex(byNS), nil
}

// podLabels lists the kube_pod_labels labels that may hold a pod's model
// or version, each once, for a "by" clause.
func (k KubeEvents) podLabels() string {
	var names []string
	for _, l := range append(slices.Clone(k.ModelLabels), k.VersionLabels...) {
		if !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	return strings.Join(names, ", ")
}

// firstLabel is the value of the first of names that m has non-empty.
func firstLabel(m model.Metric, names []string) string {
	for _, l := range names {
		if v := m[model.LabelName(l)]; v != "" {
			return string(v)
		}
	}
	return ""
}

// replicaSetHash is the pod-template hash a Deployment appends to its
// ReplicaSets' names.
var replicaSetHash = regexp.MustCompile(`^(.+)-[a-z0-9]{5,10}$`)

// ownerWorkload names the workload a pod belongs to from kube_pod_info's
// owner: a ReplicaSet's Deployment (its name without the template hash),
// or a StatefulSet. Other owners (Jobs, DaemonSets, none) give "".
func ownerWorkload(kind, name string) string {
	switch kind {
	case "ReplicaSet":
		if m := replicaSetHash.FindStringSubmatch(name); m != nil {
			return m[1]
		}
	case "StatefulSet":
		return name
	}
	return ""
}
