package pull

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/waterline-dev/waterline/correlate"
)

// EventSource is the Source of every event derived from kube-state-metrics.
const EventSource = "kube-state-metrics"

// kubeInput is kube-state-metrics over a query range: each matrix holds
// the series of one query evaluated at every grid time.
type kubeInput struct {
	grid                           []int64 // ms, ascending: every step of the range
	generation, spec, hpa, hpaInfo model.Matrix
	hpaMin, hpaMax                 model.Matrix // the autoscalers' spec limits (absent from many exports)
	podStart, restarts, ready      model.Matrix
	podLabels, podInfo             model.Matrix
	modelLabels, versionLabels     []string // the first non-empty wins
	modelOf                        func(deployment string) string
	merge                          time.Duration
}

// track is one series as values per grid index (NaN where absent).
type track []float64

func (in *kubeInput) track(s *model.SampleStream) track {
	tr := make(track, len(in.grid))
	for i := range tr {
		tr[i] = math.NaN()
	}
	j := 0
	for _, v := range s.Values {
		t := int64(v.Timestamp)
		for j < len(in.grid) && in.grid[j] < t {
			j++
		}
		if j < len(in.grid) && in.grid[j] == t {
			tr[j] = float64(v.Value)
		}
	}
	return tr
}

func present(v float64) bool { return !math.IsNaN(v) }

// pod is what the data says about one pod.
type pod struct {
	ns, name, model, version, node string
	seen                           track // 1 where kube_pod_labels has the pod
}

// deriveKubeEvents turns kube-state-metrics series into change events
// (DESIGN §6): generation bumps and new versions → deploy, desired replica
// changes → scale_up/scale_down, a new pod start time → replica_start,
// restart counter increments → replica_restart, Ready flips → node_fault /
// node_recovered. Changes are only seen between two grid points of the
// input, so a pod present at the first point is not "started". Ids are
// hashes of what identifies the change (not of the pull), so re-pulling
// never duplicates.
func deriveKubeEvents(in *kubeInput) []correlate.Event {
	if len(in.grid) < 2 {
		return nil
	}
	pods := in.pods()
	var out []correlate.Event
	deploys := in.deploys(pods)
	scales := in.scales()
	out = append(out, deploys...)
	out = append(out, scales...)
	out = append(out, in.starts(pods, deploys, scales)...)
	out = append(out, in.restartEvents(pods)...)
	out = append(out, in.nodeEvents()...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (in *kubeInput) pods() map[string]*pod {
	pods := map[string]*pod{}
	get := func(m model.Metric) *pod {
		k := string(m["namespace"]) + "/" + string(m["pod"])
		p := pods[k]
		if p == nil {
			p = &pod{ns: string(m["namespace"]), name: string(m["pod"])}
			pods[k] = p
		}
		return p
	}
	for _, s := range in.podLabels {
		p := get(s.Metric)
		p.model, p.version = firstLabel(s.Metric, in.modelLabels), firstLabel(s.Metric, in.versionLabels)
		tr := in.track(s)
		if p.seen == nil {
			p.seen = tr
		} else {
			for i, v := range tr {
				if present(v) {
					p.seen[i] = v
				}
			}
		}
	}
	for _, s := range in.podInfo {
		get(s.Metric).node = string(s.Metric["node"])
	}
	return pods
}

// versionAppearance is a version that pods of a model start to carry at a
// grid index where none of the model's pods carried it the step before.
type versionAppearance struct {
	model, version string
	at             int
	used           bool
}

func (in *kubeInput) appearances(pods map[string]*pod) []*versionAppearance {
	type mv struct{ model, version string }
	has := map[mv][]bool{}
	for _, p := range pods {
		if p.model == "" || p.version == "" || p.seen == nil {
			continue
		}
		k := mv{p.model, p.version}
		if has[k] == nil {
			has[k] = make([]bool, len(in.grid))
		}
		for i, v := range p.seen {
			if present(v) {
				has[k][i] = true
			}
		}
	}
	// Only a step where kube_pod_labels had data can tell that a version
	// was not there: at the start of the data, or after a scrape gap,
	// every version would otherwise look new.
	data := make([]bool, len(in.grid))
	for _, p := range pods {
		for i, v := range p.seen {
			if present(v) {
				data[i] = true
			}
		}
	}
	// A version is new only against the versions its model last ran: a
	// model back from zero replicas (scale to zero, a lost scrape of its
	// pods) with the version it had is no rollout, and one with no pods
	// before in the input cannot be told from one.
	running := map[string][]bool{} // model → any of its versions at i
	for k, h := range has {
		if running[k.model] == nil {
			running[k.model] = make([]bool, len(in.grid))
		}
		for i, on := range h {
			running[k.model][i] = running[k.model][i] || on
		}
	}
	var out []*versionAppearance
	for k, h := range has {
		for i := 1; i < len(h); i++ {
			if !h[i] || h[i-1] || !data[i-1] {
				continue
			}
			last := i - 1
			for last >= 0 && !running[k.model][last] {
				last--
			}
			if last < 0 || h[last] {
				continue
			}
			out = append(out, &versionAppearance{model: k.model, version: k.version, at: i})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].at != out[j].at {
			return out[i].at < out[j].at
		}
		return out[i].model+out[i].version < out[j].model+out[j].version
	})
	return out
}

// versionsAt lists the versions of model's pods at grid index i.
func versionsAt(pods map[string]*pod, mdl string, i int) []string {
	set := map[string]bool{}
	for _, p := range pods {
		if p.model == mdl && p.version != "" && p.seen != nil && present(p.seen[i]) {
			set[p.version] = true
		}
	}
	return sortedKeys(set)
}

func (in *kubeInput) steps(d time.Duration) int {
	step := in.grid[1] - in.grid[0]
	return int(d.Milliseconds() / step)
}

// deploys: a generation bump is a rollout; the version it brought is the
// first new version among the model's pods within the merge window. A new
// version without a bump (a fleet that does not export generations, or a
// label change) is a deploy of its own — once the input reaches back far
// enough before it to be sure no bump preceded it.
func (in *kubeInput) deploys(pods map[string]*pod) []correlate.Event {
	apps := in.appearances(pods)
	merge := in.steps(in.merge)
	specChanged := map[string][]bool{}
	for _, s := range in.spec {
		tr := in.track(s)
		ch := make([]bool, len(tr))
		for i := 1; i < len(tr); i++ {
			ch[i] = present(tr[i]) && present(tr[i-1]) && tr[i] != tr[i-1]
		}
		specChanged[string(s.Metric["namespace"])+"/"+string(s.Metric["deployment"])] = ch
	}
	var out []correlate.Event
	for _, s := range in.generation {
		ns, dep := string(s.Metric["namespace"]), string(s.Metric["deployment"])
		mdl := in.modelOf(dep)
		tr := in.track(s)
		for i := 1; i < len(tr); i++ {
			if !present(tr[i]) || !present(tr[i-1]) || tr[i] <= tr[i-1] {
				continue
			}
			var found *versionAppearance
			for _, a := range apps {
				if a.model == mdl && !a.used && a.at >= i && a.at <= i+merge {
					found = a
					break
				}
			}
			if found == nil {
				// Kubernetes bumps the generation on every spec change,
				// scaling included: a bump next to a replica change that
				// brought no new version is the scale, not a rollout.
				ch := specChanged[ns+"/"+dep]
				if ch != nil && (ch[i] || (i+1 < len(ch) && ch[i+1]) || ch[i-1]) {
					continue
				}
			}
			before := versionsAt(pods, mdl, i-1)
			e := correlate.Event{Kind: correlate.KindDeploy, Time: in.time(i), Scope: correlate.Scope{Model: mdl},
				Source: EventSource, Attrs: map[string]any{
					"namespace": ns, "deployment": dep, "trigger": "generation",
					"generation_from": tr[i-1], "generation_to": tr[i],
				}}
			e.ID = eventID("deploy", ns, dep, fmt.Sprint(tr[i]))
			if len(before) > 0 {
				e.Attrs["from_version"] = strings.Join(before, ",")
			}
			if found != nil {
				found.used = true
				e.Version = found.version
				e.Attrs["to_version"] = found.version
				e.Summary = fmt.Sprintf("rollout %s %s → %s (generation %g → %g)", mdl, strings.Join(before, ","), found.version, tr[i-1], tr[i])
			} else {
				e.Summary = fmt.Sprintf("rollout %s (generation %g → %g, no new version yet)", mdl, tr[i-1], tr[i])
				if len(before) == 1 {
					e.Version = before[0]
				}
			}
			out = append(out, e)
		}
	}
	for _, a := range apps {
		if a.used || a.at < merge {
			continue
		}
		before := versionsAt(pods, a.model, a.at-1)
		e := correlate.Event{ID: eventID("deploy-version", a.model, a.version, fmt.Sprint(in.grid[a.at])),
			Kind: correlate.KindDeploy, Time: in.time(a.at), Scope: correlate.Scope{Model: a.model, Version: a.version},
			Source: EventSource, Summary: fmt.Sprintf("new version %s of %s (was %s)", a.version, a.model, strings.Join(before, ",")),
			Attrs: map[string]any{"trigger": "version_label", "to_version": a.version, "from_version": strings.Join(before, ",")}}
		out = append(out, e)
	}
	return out
}

// hpaTargets maps each autoscaler (ns/name) onto the deployment it
// scales, where kube_horizontalpodautoscaler_info says.
func (in *kubeInput) hpaTargets() map[string]string {
	target := map[string]string{}
	for _, s := range in.hpaInfo {
		if t := string(s.Metric["scaletargetref_name"]); t != "" {
			target[string(s.Metric["namespace"])+"/"+string(s.Metric["horizontalpodautoscaler"])] = t
		}
	}
	return target
}

// scales: one event per change of desired replicas. The HPA's decision is
// the change; the deployment's spec following it to the same count within
// the merge window is the same change and is not repeated. A spec change
// without an HPA decision (kubectl scale, GitOps) is an event of its own.
func (in *kubeInput) scales() []correlate.Event {
	target := in.hpaTargets()
	type change struct {
		at       int
		from, to float64
	}
	// The autoscaler's min and max replicas, per ns/deployment: attributes
	// of its scale events (the limits in force at the change), so the page
	// can say whether it hit its max without a curve the analysis scores.
	limits := map[string][2]track{}
	for k, m := range []model.Matrix{in.hpaMin, in.hpaMax} {
		for _, s := range m {
			ns, name := string(s.Metric["namespace"]), string(s.Metric["horizontalpodautoscaler"])
			dep := name
			if t, ok := target[ns+"/"+name]; ok {
				dep = t
			}
			l := limits[ns+"/"+dep]
			l[k] = in.track(s)
			limits[ns+"/"+dep] = l
		}
	}
	hpaChanges := map[string][]change{} // ns/deployment → HPA changes
	var out []correlate.Event
	emit := func(ns, dep, via string, i int, from, to float64) {
		kind, verb := correlate.KindScaleUp, "scale up"
		if to < from {
			kind, verb = correlate.KindScaleDown, "scale down"
		}
		mdl := in.modelOf(dep)
		attrs := map[string]any{"namespace": ns, "deployment": dep, "from": from, "to": to, "via": via}
		if l, ok := limits[ns+"/"+dep]; ok {
			for k, name := range []string{"hpa_min_replicas", "hpa_max_replicas"} {
				if l[k] != nil && present(l[k][i]) {
					attrs[name] = l[k][i]
				}
			}
		}
		out = append(out, correlate.Event{
			ID:   eventID(string(kind), ns, dep, fmt.Sprint(in.grid[i]), fmt.Sprint(from), fmt.Sprint(to)),
			Kind: kind, Time: in.time(i), Scope: correlate.Scope{Model: mdl}, Source: EventSource,
			Summary: fmt.Sprintf("%s %s %g → %g replicas (%s)", verb, mdl, from, to, via),
			Attrs:   attrs,
		})
	}
	for _, s := range in.hpa {
		ns, name := string(s.Metric["namespace"]), string(s.Metric["horizontalpodautoscaler"])
		dep := name
		if t, ok := target[ns+"/"+name]; ok {
			dep = t
		}
		tr := in.track(s)
		for i := 1; i < len(tr); i++ {
			if present(tr[i]) && present(tr[i-1]) && tr[i] != tr[i-1] {
				hpaChanges[ns+"/"+dep] = append(hpaChanges[ns+"/"+dep], change{i, tr[i-1], tr[i]})
				emit(ns, dep, "HPA desired replicas", i, tr[i-1], tr[i])
			}
		}
	}
	merge := in.steps(in.merge)
	for _, s := range in.spec {
		ns, dep := string(s.Metric["namespace"]), string(s.Metric["deployment"])
		tr := in.track(s)
	next:
		for i := 1; i < len(tr); i++ {
			if !present(tr[i]) || !present(tr[i-1]) || tr[i] == tr[i-1] {
				continue
			}
			for _, c := range hpaChanges[ns+"/"+dep] {
				if c.to == tr[i] && c.at <= i && c.at >= i-merge {
					continue next
				}
			}
			emit(ns, dep, "deployment spec", i, tr[i-1], tr[i])
		}
	}
	return out
}

// starts: a pod whose reported start time lies inside the data (after the
// first start-time sample of any pod). The event is at that start time.
func (in *kubeInput) starts(pods map[string]*pod, deploys, scales []correlate.Event) []correlate.Event {
	dataStart := int64(math.MaxInt64) // first grid time with any start-time series
	for _, s := range in.podStart {
		for _, v := range s.Values {
			dataStart = min(dataStart, int64(v.Timestamp))
			break
		}
	}
	var out []correlate.Event
	for _, s := range in.podStart {
		ns, name := string(s.Metric["namespace"]), string(s.Metric["pod"])
		// Each start time the series reports is a life of the pod: a
		// StatefulSet's rollout recreates its pods under their names.
		for _, v := range lives(in.track(s)) {
			// The start time itself says whether the pod started inside the
			// data: appearance would also count pods that were merely not
			// scraped for a while, or that ran before the data begins.
			startMs := int64(v * 1000)
			if startMs < dataStart || startMs > in.grid[len(in.grid)-1] {
				continue
			}
			out = append(out, in.start(pods, deploys, scales, ns, name, startMs))
		}
	}
	return out
}

// lives are the distinct start times a pod's kube_pod_start_time reports,
// in order.
func lives(tr track) []float64 {
	var out []float64
	for _, v := range tr {
		if present(v) && (len(out) == 0 || v != out[len(out)-1]) {
			out = append(out, v)
		}
	}
	return out
}

// start is the replica_start event of one life of a pod.
func (in *kubeInput) start(pods map[string]*pod, deploys, scales []correlate.Event, ns, name string, startMs int64) correlate.Event {
	at := time.UnixMilli(startMs).UTC()
	p := pods[ns+"/"+name]
	if p == nil {
		p = &pod{ns: ns, name: name}
	}
	e := correlate.Event{ID: eventID("replica_start", ns, name, fmt.Sprint(startMs)), Kind: correlate.KindReplicaStart,
		Time: at, Scope: correlate.Scope{Model: p.model, Version: p.version, Replica: name, Node: p.node},
		Source: EventSource, Summary: fmt.Sprintf("replica %s started on %s", name, orUnknown(p.node)),
		Attrs: map[string]any{"namespace": ns, "start_time": time.UnixMilli(startMs).UTC().Format(time.RFC3339)}}
	// Why it started, when the data says: a rollout or a scale-up of its
	// model shortly before.
	for _, group := range []struct {
		evs   []correlate.Event
		cause string
	}{{deploys, "rollout"}, {scales, "scale_up"}} {
		for _, d := range group.evs {
			if d.Model == p.model && p.model != "" && d.Kind != correlate.KindScaleDown &&
				!d.Time.After(at) && at.Sub(d.Time) <= in.merge {
				e.Attrs["cause"] = group.cause
			}
		}
		if e.Attrs["cause"] != nil {
			break
		}
	}
	return e
}

// lifeAt is the start time of the pod's life at grid index i: the
// last one reported at or before i, else the next (NaN: none).
func lifeAt(started track, i int) float64 {
	for j := min(i, len(started)-1); j >= 0; j-- {
		if present(started[j]) {
			return started[j]
		}
	}
	for j := i + 1; j < len(started); j++ {
		if present(started[j]) {
			return started[j]
		}
	}
	return math.NaN()
}

// restartEvents: every increment of a container's restart counter.
func (in *kubeInput) restartEvents(pods map[string]*pod) []correlate.Event {
	started := map[string]track{}
	for _, s := range in.podStart {
		started[string(s.Metric["namespace"])+"/"+string(s.Metric["pod"])] = in.track(s)
	}
	var out []correlate.Event
	for _, s := range in.restarts {
		ns, name, ctr := string(s.Metric["namespace"]), string(s.Metric["pod"]), string(s.Metric["container"])
		tr := in.track(s)
		p := pods[ns+"/"+name]
		if p == nil {
			p = &pod{ns: ns, name: name}
		}
		life := started[ns+"/"+name]
		for i := 1; i < len(tr); i++ {
			if !present(tr[i]) || !present(tr[i-1]) || tr[i] <= tr[i-1] {
				continue
			}
			// The count restarts at 0 in each life of the pod: its start
			// time, where known, tells the lives' restarts apart.
			id := eventID("replica_restart", ns, name, ctr, fmt.Sprint(tr[i]))
			if at := lifeAt(life, i); present(at) {
				id = eventID("replica_restart", ns, name, ctr, fmt.Sprint(tr[i]), fmt.Sprint(at))
			}
			out = append(out, correlate.Event{
				ID:   id,
				Kind: correlate.KindReplicaRestart, Time: in.time(i),
				Scope:   correlate.Scope{Model: p.model, Version: p.version, Replica: name, Node: p.node},
				Source:  EventSource,
				Summary: fmt.Sprintf("replica %s restarted (container %s, %g restarts in total)", name, ctr, tr[i]),
				Attrs:   map[string]any{"namespace": ns, "container": ctr, "restarts": tr[i], "delta": tr[i] - tr[i-1]},
			})
		}
	}
	return out
}

// nodeEvents: the Ready condition leaving "true" is a fault, returning to
// it a recovery.
func (in *kubeInput) nodeEvents() []correlate.Event {
	nodes := map[string][]string{}
	for _, s := range in.ready {
		node, status := string(s.Metric["node"]), strings.ToLower(string(s.Metric["status"]))
		if nodes[node] == nil {
			nodes[node] = make([]string, len(in.grid))
		}
		for i, v := range in.track(s) {
			if v == 1 && (nodes[node][i] == "" || status == "true") {
				nodes[node][i] = status
			}
		}
	}
	var out []correlate.Event
	for _, node := range sortedKeys(nodes) {
		last := ""
		for i, status := range nodes[node] {
			if status == "" {
				continue
			}
			if last != "" && (last == "true") != (status == "true") {
				kind, summary := correlate.KindNodeFault, fmt.Sprintf("node %s not ready (Ready=%s)", node, status)
				if status == "true" {
					kind, summary = correlate.KindNodeRecovered, fmt.Sprintf("node %s ready again", node)
				}
				out = append(out, correlate.Event{
					ID: eventID(string(kind), node, fmt.Sprint(in.grid[i])), Kind: kind, Time: in.time(i),
					Scope: correlate.Scope{Node: node}, Source: EventSource, Summary: summary,
					Attrs: map[string]any{"condition": "Ready", "status": status, "previous": last},
				})
			}
			last = status
		}
	}
	return out
}

func (in *kubeInput) time(i int) time.Time { return time.UnixMilli(in.grid[i]).UTC() }

func orUnknown(s string) string {
	if s == "" {
		return "an unknown node"
	}
	return s
}

// eventID hashes what identifies a change into a stable id.
func eventID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "ksm-" + hex.EncodeToString(h[:12])
}
