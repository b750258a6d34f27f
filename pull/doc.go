// Package pull is Waterline's intake from Prometheus (or anything that
// speaks its HTTP API: Thanos, Mimir, VictoriaMetrics). It is the only
// package that imports client_golang's api.
//
// # Queries by role
//
// A query maps PromQL onto one role (correlate.Role) at one level, with a
// label mapping onto model, version, tenant, replica, node (and stage).
// Built-in presets — inference (the default, DESIGN §6), triton, vllm,
// sglang, tgi,
// dcgm, node, kube-state-metrics, and http for plain HTTP services (the
// OpenTelemetry semantic-convention metrics) — are YAML files in presets/, in the same
// format as WATERLINE_CONFIG (see fileYAML), and compose: "presets:
// [inference, vllm]", a user query of the same name replaces a preset's,
// "disable:" drops one. Replica curves always carry model, version and
// node: what the series lacks comes from kube_pod_labels / kube_pod_info.
// LoadConfig validates the file with line numbers; Config.Validate has
// Prometheus evaluate every query once and names the one it rejects.
// Config.SLOFor gives the latency objective of a model (directly or by
// tier).
//
// # Change events from kube-state-metrics
//
// deploy: a deployment's generation bump, with the version its new pods
// carry (first new label_version of the model within the merge window);
// or a new version with no bump. A bump next to a replica change without a
// new version is the scaling, not a rollout. scale_up / scale_down: the
// HPA's desired replicas, else the deployment's spec (a spec change that
// follows an HPA decision to the same count is the same change).
// replica_start: a pod whose kube_pod_start_time lies inside the pulled
// data (pods running when the data begins are not "started").
// replica_restart: each increment of a container's restart counter.
// node_fault / node_recovered: the Ready condition leaving or regaining
// "true". Ids hash what identifies the change, so re-pulling never
// duplicates; a later pull may refresh an event it saw earlier with more
// detail (a rollout's version).
//
// # Pulling
//
// Puller.History pulls a range chunk by chunk (at most 10,000 points per
// series per query and max_chunk per chunk), Parallelism sources at a
// time; each source's progress is a history gap, advanced in the
// transaction that commits its chunk, so a rerun resumes. Run is serve's
// live loop: a Postgres advisory lock (store.Lease) elects one puller
// among replicas; each round pulls every source from its cursor (less an
// overlap) to now − delay (a round waits for a slow source at most an
// interval: it goes on pulling, and is skipped until done); a failed round is retried with exponential
// backoff and jitter, and the missed range is recorded as an outage gap,
// closed when the cursor passes it. An answer with a warning of missing
// data (a failed remote read, a partial response) is such a failure, not
// data to store; other warnings are logged once per source.
// RegisterMetrics exposes the health on /metrics; GET
// /api/v1/pull/status reads the same from Postgres.
package pull
