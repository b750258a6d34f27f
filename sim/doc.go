// Package sim simulates an ML-inference fleet with one injected incident,
// for `waterline demo` and as a fixture generator for other packages'
// tests. It is pure Go (stdlib and correlate) and deterministic: the same
// Options give the same bytes.
//
// # Use
//
//	f, err := sim.New(sim.Options{Seed: 7, Scenario: sim.Release, Start: now.Add(-3 * time.Hour)})
//	err = f.WriteOpenMetrics(w, progress)   // for promtool tsdb create-blocks-from openmetrics
//	events := f.Events()                    // POST /api/v1/events
//	n, err := f.WriteSamplesNDJSON(w)       // POST /api/v1/samples (or range f.Samples())
//	truth, desc := f.Truth(), f.Description()
//
// sim.Small(seed, scenario) gives a 30 min, two-model fleet that generates
// in tens of milliseconds. The simbundle command (sim/cmd/simbundle) writes
// all outputs as a bundle directory like the shared scenarios.
//
// A Script is a fleet written down instead of simulated — replicas with
// fixed lifetimes and constant load, deployment changes, restarts, nodes
// going NotReady — exported with the same series, for tests that must
// know exactly what a query returns (the puller's).
//
// # Model
//
// The fleet is built from a catalog of models (tier, SLO, entry route,
// batch cost curve, batch size and window, CPU and payload per request,
// weights size, whether it calls the downstream dependency vector-db),
// tenants with Zipf-like shares per model, and GPU nodes (A100 and slower
// L40S pools, four GPUs each). Replicas are Kubernetes pods named
// <model>-<pod-template-hash>-<suffix>, spread over nodes.
//
// Every request is simulated. Arrivals are Poisson with a rate per tick
// that follows a diurnal curve with slow mean-reverting noise per model and
// tenant. A request passes the gateway (a shared M/M/1-like queue whose
// wait grows as its utilisation nears 1), auth and routing (least-request
// power-of-two-choices or random, per model), then a replica's dynamic
// batcher: a FIFO in front of one GPU that dispatches when the GPU is free
// and either a full batch is queued or the oldest request has waited the
// batch window. Waiting while the GPU is busy is the queue stage, waiting
// for the batch to fill is batch_wait. A batch's exec time follows the cost
// curve execBase·(1+execPerItem·(b−1)) scaled by the GPU type, the pod, its
// version, a throttled node or a cold replica, with lognormal noise and
// rare stalls; postprocess and the downstream call follow. Requests that
// wait past the queue timeout fail with status "timeout". Queueing, batch
// growth under load and GPU utilisation are therefore consequences of the
// load, not drawn curves.
//
// # Scenarios
//
// A scenario changes one input of the model at the onset:
//
//   - release: a rolling update to a new version whose exec is ×(1+0.8·s);
//     pushed deploy event, generation bump, new pods and labels.
//   - capacity: one tenant's traffic to one model surges until the pool
//     runs at (0.6+0.2·s) of its full-batch capacity; nothing pushed.
//   - local_replica: a node's GPUs throttle, exec ×(1+0.9·s) for its pods;
//     the node stays Ready; nothing pushed.
//   - batching: a model's batch window rises by 0.5·s·SLO; pushed
//     config_change.
//   - cold_start: a scheduled scale-up adds two pods that pass readiness
//     before their weights are resident (exec ×(1+4·s), fading with τ =
//     150 s); visible only in kube-state-metrics (HPA desired, spec
//     replicas, new pods and start times).
//   - downstream: vector-db's median latency ×(1+5·s) with a wider spread,
//     for the models that call it; nothing pushed.
//   - routing: a route change sends a share of one model's traffic to one
//     replica large enough to run it near capacity; pushed route_change.
//   - ingress: the gateway loses capacity and runs near saturation, so the
//     gateway stage grows for every model; pushed config_change.
//   - none: nothing.
//
// s is Options.Strength (default 1). Options.EffectDuration ends a cause
// (rollback, revert, recovery), Options.Confounders adds innocent changes,
// and Options.HideCauseEvent withholds the cause's pushed event.
//
// # Outputs
//
// Metrics follow DESIGN §6 and are written family by family, series by
// series, in time order; counters of pods that ran before the window carry
// their history, and pods that start in the window start their series then.
// Events are only what a CD system, config service or gateway control plane
// would push. Samples are a head sample (1 in N) of requests within the
// SLO plus a tail sample (1 in 2 by default) of those over it, each
// weighted by its sample_rate. The truth records the category, target,
// onset of the effect, recovery and the measured P99 before and during.
package sim
