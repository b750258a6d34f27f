package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/waterline-dev/waterline/correlate"
)

// flagChanges are unrelated feature-flag pushes.
var flagChanges = []string{
	"raise access log sampling to 5%",
	"enable new billing export",
	"update tenant quota t-contoso",
	"turn on tracing for /v1/embeddings",
	"rotate API key cache TTL 300s -> 600s",
}

// confound adds innocent changes before the onset, the kind an on-call
// engineer has to rule out: a deploy of another model that changes
// nothing, an unrelated feature flag, a harmless route tweak on another
// model (pushed events), and a pre-warmed scale-up of another model (only in
// kube-state-metrics).
func (f *Fleet) confound(r *rand.Rand) error {
	onset := f.cause.action
	var others []*model
	for _, m := range f.models {
		if m != f.cause.model {
			others = append(others, m)
		}
	}
	pick := func() *model { return others[r.IntN(len(others))] }
	before := func(lo, hi float64) float64 { return math.Max(60, onset-lo-(hi-lo)*r.Float64()) }

	if len(others) > 0 {
		m := pick()
		t := before(360, 840)
		from := f.versionAt(m, t)
		to := bumpPatch(from)
		if _, err := f.rollout(r, m, to, t, 0.98+0.04*r.Float64()); err != nil {
			return err
		}
		f.events = append(f.events, f.deployEvent(m, correlate.KindDeploy, from, to, t))
	}

	flag := flagChanges[r.IntN(len(flagChanges))]
	f.events = append(f.events, f.changeEvent(correlate.KindConfigChange, "feature-flags", "", flag, before(900, 1800),
		map[string]any{"flag": flag}))

	if len(others) > 0 {
		m := pick()
		budget := []string{"10%", "20%"}
		if r.IntN(2) == 0 {
			budget[0], budget[1] = budget[1], budget[0]
		}
		f.events = append(f.events, f.changeEvent(correlate.KindRouteChange, "gateway", m.spec.name,
			fmt.Sprintf("%s retry budget %s -> %s", m.spec.name, budget[0], budget[1]), before(1500, 2700),
			map[string]any{"key": "retry_budget", "from": budget[0], "to": budget[1]}))
	}

	if len(others) > 0 {
		m := pick()
		if _, err := f.scaleUp(r, m, before(1200, 2400), 1, 0, 0); err != nil {
			return err
		}
	}
	return nil
}
