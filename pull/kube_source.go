package pull

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/waterline-dev/waterline/correlate"
)

// kubeContext is how far before its window the events source reads: a
// change is only seen against the point before it, a rollout's version
// arrives after its generation bump, and an HPA decision precedes the
// spec change it causes.
func (c *Config) kubeContext() time.Duration { return 3 * c.Kube.MergeWindow }

// fetchKube queries kube-state-metrics over w (plus the context before it)
// and derives the events (splitKubeEvents says which are stored).
func (p *Puller) fetchKube(ctx context.Context, w window) (*batch, error) {
	k := p.config().Kube
	step := p.config().Step
	qFrom := alignDown(w.from.Add(-p.config().kubeContext()), step)
	qTo := w.last(step)
	in := &kubeInput{
		modelLabels: k.ModelLabels, versionLabels: k.VersionLabels,
		merge: k.MergeWindow, modelOf: p.modelOf,
	}
	for t := qFrom; !t.After(qTo); t = t.Add(step) {
		in.grid = append(in.grid, t.UnixMilli())
	}
	queries := []struct {
		dst  *model.Matrix
		expr string
	}{
		{&in.generation, workloadQuery("kube_deployment_metadata_generation", "kube_statefulset_metadata_generation")},
		{&in.spec, workloadQuery("kube_deployment_spec_replicas", "kube_statefulset_replicas")},
		// kube-state-metrics 1.x named the autoscaler's series kube_hpa_*
		// with the label hpa (2.0 renamed both): read either.
		{&in.hpa, hpaQuery("status_desired_replicas", "")},
		{&in.hpaInfo, hpaQuery("info", "scaletargetref_name")},
		{&in.hpaMin, hpaQuery("spec_min_replicas", "")},
		{&in.hpaMax, hpaQuery("spec_max_replicas", "")},
		{&in.podStart, fmt.Sprintf(`max by (namespace, pod) (%s)`, ksmSeries("kube_pod_start_time"))},
		{&in.restarts, fmt.Sprintf(`max by (namespace, pod, container) (%s)`, ksmSeries("kube_pod_container_status_restarts_total"))},
		{&in.ready, `max by (node, status) (kube_node_status_condition{condition="Ready"})`},
		{&in.podLabels, fmt.Sprintf(`max by (namespace, pod, %s) (%s)`, k.podLabels(), ksmSeries("kube_pod_labels"))},
		{&in.podInfo, fmt.Sprintf(`max by (namespace, pod, node) (%s)`, ksmSeries("kube_pod_info"))},
	}
	cfg := p.config()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(3)
	for _, q := range queries {
		g.Go(func() error {
			m, err := p.prom.rangeQuery(gctx, EventsSource, cfg.scoped(q.expr), qFrom, qTo, step)
			*q.dst = m
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	b := &batch{curves: in.poolCurves(w)}
	b.events, b.refresh = splitKubeEvents(deriveKubeEvents(in), qFrom.Add(k.MergeWindow), w)
	return b, nil
}

// splitKubeEvents sorts derived events into those to store (up to w's end)
// and those only to refresh if stored: the ones in the first merge window
// of the input, which the derivation could not see whole (a version
// arriving before it, the point before a change). The rest of the context
// is stored too: a pod started within a scrape of the window's start, or a
// rollout whose new pods first showed in this window, was seen by the
// previous window only as a change it could not place, and was lost.
func splitKubeEvents(events []correlate.Event, reliableFrom time.Time, w window) (store, refresh []correlate.Event) {
	for _, e := range events {
		switch {
		case e.Time.Before(reliableFrom):
			refresh = append(refresh, e)
		case e.Time.Before(w.to):
			store = append(store, e)
		}
	}
	return store, refresh
}

// modelOf maps a deployment (or HPA target) name onto a model through
// kube_events.model_from_deployment.
func (p *Puller) modelOf(deployment string) string {
	m := p.config().Kube.ModelFromDeployment.FindStringSubmatch(deployment)
	switch {
	case m == nil:
		return deployment
	case len(m) > 1 && m[1] != "":
		return m[1]
	}
	return m[0]
}

// hpaQuery reads an autoscaler series of kube-state-metrics 2 (named
// kube_horizontalpodautoscaler_<name>, label horizontalpodautoscaler) or,
// where there is none, of 1.x (kube_hpa_<name>, label hpa), grouped by
// namespace, autoscaler and extra (if any).
func hpaQuery(name, extra string) string {
	by := "namespace, horizontalpodautoscaler"
	if extra != "" {
		by += ", " + extra
	}
	return fmt.Sprintf(`max by (%s) (%s) or max by (%s) (label_replace(%s, "horizontalpodautoscaler", "$1", "hpa", "(.+)"))`,
		by, ksmSeries("kube_horizontalpodautoscaler_"+name), by, ksmSeries("kube_hpa_"+name))
}

// workloadQuery reads a Deployment series and its StatefulSet
// counterpart as one, a StatefulSet's name in "deployment": model servers
// run as either (a StatefulSet for stable names and volumes, multi-node
// vLLM), and a StatefulSet's rollouts and scaling were never seen.
func workloadQuery(deployment, statefulSet string) string {
	return fmt.Sprintf(`max by (namespace, deployment) (%s) or max by (namespace, deployment) (label_replace(%s, "deployment", "$1", "statefulset", "(.+)"))`,
		ksmSeries(deployment), ksmSeries(statefulSet))
}

// ksmSeries wraps a selector of kube-state-metrics series so that the
// workload's namespace, pod and container are in namespace, pod and
// container however Prometheus scraped it. Without honor_labels (the
// standalone kube-state-metrics chart's ServiceMonitor default, bitnami's
// kube-prometheus) the workload's are exported_namespace, exported_pod
// and exported_container, and namespace, pod and container are
// kube-state-metrics' own: every pod of the cluster was one pod
// ("monitoring/kube-state-metrics-0"). The exporter's value wins where
// there is one. The exported_* labels stay on the series, so no two of
// them become one (label_replace would fail on that).
func ksmSeries(selector string) string {
	for _, l := range []string{"namespace", "pod", "container"} {
		selector = fmt.Sprintf(`label_replace(%s, %q, "$1", "exported_%s", "(.+)")`, selector, l, l)
	}
	return selector
}
