package pull

import (
	"math"

	"github.com/prometheus/common/model"

	"github.com/waterline-dev/waterline/correlate"
)

// poolCurves are the model-level curves of its pool, from the
// kube-state-metrics series the events source reads anyway: the desired
// replicas of the model's deployments (their spec, which the autoscaler
// writes) and the autoscaler's min and max, summed over the deployments
// that map onto the model. They are state, not load: the analysis reads
// them to say whether the pool could still grow, and scores no cause on
// them. Only the points of w are returned (the context before it was the
// previous window's).
func (in *kubeInput) poolCurves(w window) []pulledCurve {
	target := in.hpaTargets()
	var out []pulledCurve
	sum := func(role correlate.Role, m model.Matrix, deployment func(*model.SampleStream) string) {
		byModel := map[string]track{}
		var order []string
		for _, s := range m {
			mdl := in.modelOf(deployment(s))
			if mdl == "" {
				continue
			}
			acc, ok := byModel[mdl]
			if !ok {
				acc = make(track, len(in.grid))
				for i := range acc {
					acc[i] = math.NaN()
				}
				byModel[mdl] = acc
				order = append(order, mdl)
			}
			for i, v := range in.track(s) {
				if present(v) {
					if math.IsNaN(acc[i]) {
						acc[i] = 0
					}
					acc[i] += v
				}
			}
		}
		for _, mdl := range order {
			c := correlate.Curve{Role: role, Level: correlate.LevelModel, Scope: correlate.Scope{Model: mdl}}
			for i, v := range byModel[mdl] {
				if t := in.grid[i]; present(v) && t >= w.from.UnixMilli() && t < w.to.UnixMilli() {
					c.Points = append(c.Points, correlate.Point{T: t, V: v})
				}
			}
			if len(c.Points) > 0 {
				out = append(out, pulledCurve{curve: c, labels: map[string]string{"source": EventSource}})
			}
		}
	}
	sum(correlate.RoleReplicas, in.spec, func(s *model.SampleStream) string { return string(s.Metric["deployment"]) })
	hpaTarget := func(s *model.SampleStream) string {
		ns, name := string(s.Metric["namespace"]), string(s.Metric["horizontalpodautoscaler"])
		if t, ok := target[ns+"/"+name]; ok {
			return t
		}
		return name
	}
	sum(correlate.RoleReplicasMin, in.hpaMin, hpaTarget)
	sum(correlate.RoleReplicasMax, in.hpaMax, hpaTarget)
	return out
}
