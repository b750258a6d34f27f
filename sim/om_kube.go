package sim

// kube-state-metrics: pods exist from their start until deletion;
// deployment and HPA gauges follow the plan's timelines; nodes stay Ready
// (a throttled GPU does not flip a node condition).

func (o *omWriter) writeKube() {
	f := o.f
	var v valBuf
	one := []byte("1")
	zero := []byte("0")

	podFamily := func(name, typ, help string, labels func(*pod) []byte, val func(*pod, int) []byte) {
		o.family(name, typ, help)
		sample := name
		if typ == "counter" {
			sample += "_total"
		}
		for _, p := range f.pods {
			first, last := f.stepRange(p.created, p.gone)
			if first > last {
				continue
			}
			o.seriesDone()
			if o.skip() {
				continue
			}
			lab := labels(p)
			for i := first; i <= last; i++ {
				o.sample(sample, lab, "", val(p, i), i)
			}
		}
	}
	podFamily("kube_pod_info", "gauge", "Information about pod.",
		func(p *pod) []byte {
			return labelSet("namespace", namespace, "pod", p.name, "node", p.node.name,
				"created_by_kind", "ReplicaSet", "created_by_name", p.rs)
		},
		func(*pod, int) []byte { return one })
	podFamily("kube_pod_labels", "gauge", "Kubernetes labels converted to Prometheus labels.",
		func(p *pod) []byte {
			return labelSet("namespace", namespace, "pod", p.name, "label_app", p.model.spec.name, "label_version", p.version)
		},
		func(*pod, int) []byte { return one })
	podFamily("kube_pod_start_time", "gauge", "Start time in unix timestamp for a pod.",
		func(p *pod) []byte { return labelSet("namespace", namespace, "pod", p.name) },
		func(p *pod, _ int) []byte { return v.uint(uint64(f.at(p.created).Unix())) })
	podFamily("kube_pod_container_status_restarts", "counter", "The number of container restarts per container.",
		func(p *pod) []byte {
			return labelSet("namespace", namespace, "pod", p.name, "container", "model-server")
		},
		func(*pod, int) []byte { return zero })

	deployFamily := func(name, help, key string, tl func(*model) []stepValue) {
		o.family(name, "gauge", help)
		for _, m := range f.models {
			o.seriesDone()
			if o.skip() {
				continue
			}
			lab := labelSet("namespace", namespace, key, m.spec.name)
			changes := tl(m)
			for i := 0; i < f.nSteps; i++ {
				o.sample(name, lab, "", v.uint(uint64(valueAt(changes, f.stepTime(i), 0))), i)
			}
		}
	}
	deployFamily("kube_deployment_spec_replicas", "Number of desired pods for a deployment.", "deployment",
		func(m *model) []stepValue { return m.spec2 })
	deployFamily("kube_deployment_metadata_generation", "Sequence number representing a specific generation of the desired state.", "deployment",
		func(m *model) []stepValue { return m.generation })
	deployFamily("kube_horizontalpodautoscaler_status_desired_replicas", "Desired number of replicas of pods managed by this autoscaler.", "horizontalpodautoscaler",
		func(m *model) []stepValue { return m.hpa })
	// The autoscalers' spec limits, fixed: min the initial replicas, max
	// twice that (or the most the plan ever desires). No random draw, so
	// every simulated fleet stays as it was.
	limit := func(k int) func(m *model) []stepValue {
		return func(m *model) []stepValue {
			lo, hi := hpaLimits(float64(m.replicas), func(yield func(float64) bool) {
				for _, h := range m.hpa {
					if !yield(h.v) {
						return
					}
				}
			})
			return []stepValue{{t: -inf, v: []float64{lo, hi}[k]}}
		}
	}
	deployFamily("kube_horizontalpodautoscaler_spec_min_replicas", "Lower limit for the number of pods that can be set by the autoscaler, default 1.", "horizontalpodautoscaler", limit(0))
	deployFamily("kube_horizontalpodautoscaler_spec_max_replicas", "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.", "horizontalpodautoscaler", limit(1))

	o.family("kube_node_status_condition", "gauge", "The condition of a cluster node.")
	for _, n := range f.nodes {
		for _, cond := range []string{"Ready", "MemoryPressure", "DiskPressure"} {
			for _, st := range []string{"true", "false", "unknown"} {
				o.seriesDone()
				if o.skip() {
					continue
				}
				lab := labelSet("node", n.name, "condition", cond, "status", st)
				val := zero
				if (cond == "Ready") == (st == "true") && st != "unknown" {
					val = one
				}
				for i := 0; i < f.nSteps; i++ {
					o.sample("kube_node_status_condition", lab, "", val, i)
				}
			}
		}
	}
}
