package correlate

import "fmt"

// ingressCause: the gateway (or auth, routing in front of the models) got
// slow for everyone. Signature: the front stages explain the growth, all
// models are hit at once, nothing inside the model servers changed and no
// replica stands out.
func ingressCause(f *facts) Cause {
	b := newCause(CatIngress)
	fs := f.frontShare()
	b.support("gateway_growth", fs, ramp(fs, 0.25, 0.6), 0.55, "Gateway, auth and routing explain %.0f%% of the tail's growth.", 100*fs)
	// Breadth needs a fleet: one model of one is no sign of a shared front.
	// Breadth and quiet model servers only back a front that grew: alone
	// they fit any fleet-wide cause (a slow dependency, a traffic peak).
	n := f.modelsWithData()
	if br := f.breadth(); n >= 2 {
		b.corroborate("all_models", br, ramp(br, 0.4, 0.9), 0.25, "%s slowed down at once.", capitalize(kOfN(len(f.slowed), n, "model")))
	}
	f.supportNotLocal(b, "No replica or node stands out.")
	// Only stages the servers time count: an untimed one reads 0 %, which
	// would clear the model servers on no evidence.
	inside, timed := 0.0, false
	for _, st := range []string{"queue", "exec", "batch_wait"} {
		if stageMeasured(f.stages, st) {
			inside, timed = inside+stageShare(f.stages, st), true
		}
	}
	if timed {
		b.corroborate("model_servers_unchanged", inside, 1-ramp(inside, 0.2, 0.5), 0.10, "The model servers' own stages explain only %.0f%%.", 100*inside)
	}
	// The growth measured elsewhere: the front stages' times are known
	// (the cause is not assessable without them) and stayed flat while
	// one stage behind them took most of the growth.
	if top := dominantStages(f.stages); len(top) > 0 && top[0].Share > 0.5 && fs < 0.25 &&
		top[0].Stage != "gateway" && top[0].Stage != "auth" && top[0].Stage != "route" {
		b.oppose("growth_behind_the_front", top[0].Share, 1-ramp(fs, 0.1, 0.25), 0.3,
			"%.0f%% of the tail's growth is in the %s stage, behind the gateway.", 100*top[0].Share, top[0].Stage)
	}
	if len(f.slowed) == 1 && f.modelsWithData() > 1 {
		b.oppose("one_model_only", 1, 1, 0.25, "Only %s slowed down; a gateway problem would hit every model.", f.slowed[0])
	}
	sum := fmt.Sprintf("The gateway, auth and route stages %s.", grewLittle(fs, "explain"))
	if !stageMeasured(f.stages, "gateway") && !stageMeasured(f.stages, "auth") && !stageMeasured(f.stages, "route") {
		sum = "No gateway, auth or route time is measured during the spike."
		if why := f.timedOneSide(f.affected, "The time at the gateway, auth and route stages", StageGateway, StageAuth, StageRoute); why != "" {
			sum = why + "."
		}
	}
	if b.shown("gateway_growth") >= claimed {
		sum = fmt.Sprintf("The gateway / ingress in front of the models got slow (%.0f%% of the tail's growth) for %s.", 100*fs, kOfN(len(f.slowed), n, "model"))
		if n == 1 {
			sum = fmt.Sprintf("The gateway / ingress in front of %s got slow (%.0f%% of the tail's growth); no other model has data, so whether the others were hit cannot be seen.", f.affected[0], 100*fs)
		}
	}
	return b.done(sum, Target{})
}
