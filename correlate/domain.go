// Package correlate holds Waterline's domain types (events, curves, request
// samples, spikes, incidents, causes) and the pure algorithms that turn them
// into a diagnosis. It performs no I/O and reads no clock: callers pass every
// input, including "now", explicitly.
package correlate

import (
	"fmt"
	"time"
)

// Scope names where something happened. Empty fields mean "any" or "not
// applicable"; a curve of a whole model has only Model set, a node curve only
// Node, a replica curve Model, Version, Replica and Node.
type Scope struct {
	Model   string `json:"model,omitempty"`
	Version string `json:"version,omitempty"`
	Tenant  string `json:"tenant,omitempty"`
	Replica string `json:"replica,omitempty"`
	Node    string `json:"node,omitempty"`
}

// IsZero reports whether no field of the scope is set.
func (s Scope) IsZero() bool { return s == Scope{} }

// Covers reports whether every field set in s is equal in o: a scope with
// only Model set covers every replica of that model.
func (s Scope) Covers(o Scope) bool {
	return (s.Model == "" || s.Model == o.Model) &&
		(s.Version == "" || s.Version == o.Version) &&
		(s.Tenant == "" || s.Tenant == o.Tenant) &&
		(s.Replica == "" || s.Replica == o.Replica) &&
		(s.Node == "" || s.Node == o.Node)
}

// String renders the set fields as "model=a version=b", for logs and keys.
func (s Scope) String() string {
	out := ""
	add := func(k, v string) {
		if v == "" {
			return
		}
		if out != "" {
			out += " "
		}
		out += k + "=" + v
	}
	add("model", s.Model)
	add("version", s.Version)
	add("tenant", s.Tenant)
	add("replica", s.Replica)
	add("node", s.Node)
	return out
}

// EventKind is one of the event vocabulary of DESIGN §5.
type EventKind string

// The event kinds Waterline understands.
const (
	KindDeploy         EventKind = "deploy"
	KindRollback       EventKind = "rollback"
	KindConfigChange   EventKind = "config_change"
	KindRouteChange    EventKind = "route_change"
	KindScaleUp        EventKind = "scale_up"
	KindScaleDown      EventKind = "scale_down"
	KindReplicaStart   EventKind = "replica_start"
	KindReplicaRestart EventKind = "replica_restart"
	KindNodeFault      EventKind = "node_fault"
	KindNodeRecovered  EventKind = "node_recovered"
	KindAlert          EventKind = "alert"
	KindCustom         EventKind = "custom"
	// KindAnnotation is a note from a tool that annotates dashboards
	// (POST /api/annotations without a kind tag): shown on the timeline,
	// weighted by time and scope like any event, but no cause rests on it.
	KindAnnotation EventKind = "annotation"
)

// EventKinds lists every valid kind, in the order the UI shows them.
var EventKinds = []EventKind{
	KindDeploy, KindRollback, KindConfigChange, KindRouteChange, KindScaleUp, KindScaleDown,
	KindReplicaStart, KindReplicaRestart, KindNodeFault, KindNodeRecovered, KindAlert, KindCustom,
	KindAnnotation,
}

// Valid reports whether k is in the vocabulary.
func (k EventKind) Valid() bool {
	for _, v := range EventKinds {
		if k == v {
			return true
		}
	}
	return false
}

// Event is a change or a fact on the timeline: a deploy, a scale-up, a node
// fault, an alert. ID is the idempotency key (given by the sender, or a hash
// of kind, time, scope and summary).
type Event struct {
	ID      string         `json:"id"`
	Kind    EventKind      `json:"kind"`
	Time    time.Time      `json:"time"`
	EndTime *time.Time     `json:"end_time,omitempty"`
	Scope                  // model, version, tenant, replica, node
	Source  string         `json:"source,omitempty"`
	Summary string         `json:"summary,omitempty"`
	Attrs   map[string]any `json:"attrs,omitempty"`
}

// Stage is one of the fixed request stages of DESIGN §5.
type Stage int

// The stages of an inference request, in the order a request passes them.
const (
	StageGateway Stage = iota
	StageAuth
	StageRoute
	StageQueue
	StageBatchWait
	StageExec
	StagePostprocess
	StageDownstream
	NumStages int = iota
)

var stageNames = [NumStages]string{"gateway", "auth", "route", "queue", "batch_wait", "exec", "postprocess", "downstream"}

// String returns the stage's wire name ("batch_wait").
// MaxLatencyMs bounds a sample's total and stage times (a day) and
// MaxSampleRate its sample rate: no inference request lasts longer or
// stands for more, and past them the sums of a page or an analysis
// overflow to +Inf. Ingest refuses what lies outside.
const (
	MaxLatencyMs  = 24 * 3600 * 1000
	MaxSampleRate = 1e6
)

func (s Stage) String() string {
	if int(s) < 0 || int(s) >= NumStages {
		return fmt.Sprintf("stage(%d)", int(s))
	}
	return stageNames[s]
}

// ParseStage maps a wire name onto a Stage; ok is false for unknown names.
func ParseStage(name string) (Stage, bool) {
	for i, n := range stageNames {
		if n == name {
			return Stage(i), true
		}
	}
	return 0, false
}

// StageNames lists the wire names of all stages in request order.
func StageNames() []string { return append([]string(nil), stageNames[:]...) }

// Sample is one stored request: its dimensions and how long each stage took.
// SampleRate is "1 in N kept" and weights the sample in every count.
type Sample struct {
	RequestID  string
	Time       time.Time
	Model      string
	Version    string
	Tenant     string
	Replica    string
	Node       string
	Entry      string
	BatchSize  int // 0 when unknown
	Status     string
	TotalMs    float64
	StagesMs   [NumStages]float64 // NaN where the stage was not reported
	SampleRate float64            // ≥ 1
	// Dependency names what the downstream stage called (OTel's
	// peer.service), when the sender knows it; "" otherwise.
	Dependency string
	// InputTokens and OutputTokens are an LLM request's prompt and
	// generated tokens (OTel's gen_ai.usage.*); 0 when unknown. A request
	// that writes four times the tokens takes about four times as long to
	// decode: the slow requests may just be the long ones.
	InputTokens, OutputTokens int
}

// MaxTokens bounds a request's token counts: far past any model's
// context, well inside the int32 columns.
const MaxTokens = 1 << 24

// Point is one value of a curve at a time (Unix milliseconds).
type Point struct {
	T int64   `json:"t"`
	V float64 `json:"v"`
}

// Time returns the point's time.
func (p Point) Time() time.Time { return time.UnixMilli(p.T).UTC() }

// Level says at what aggregation a curve was computed.
type Level string

// Curve levels, from the whole fleet down to one replica or node.
const (
	LevelFleet   Level = "fleet"
	LevelModel   Level = "model"
	LevelVersion Level = "version"
	LevelReplica Level = "replica"
	LevelNode    Level = "node"
)

// Role names what a curve measures. Roles are the vocabulary shared by the
// pull presets (which map PromQL onto roles) and the analysis (which reads
// curves by role). Stage curves carry the stage in Curve.Stage.
type Role string

// The roles the analysis understands. Units are in the comments.
const (
	RoleLatencyP50 Role = "latency_p50" // ms
	RoleLatencyP95 Role = "latency_p95" // ms
	RoleLatencyP99 Role = "latency_p99" // ms
	// RoleLatencyMean is the mean latency, for servers that publish no
	// quantile by default (Triton's cumulative request duration over its
	// request count): read only where a model has no P99 or P95.
	RoleLatencyMean Role = "latency_mean" // ms
	RoleQPS         Role = "qps"          // requests/s
	RoleErrorRate   Role = "error_rate"   // fraction 0..1
	RoleQueue       Role = "queue"        // requests waiting
	RoleBatchSize   Role = "batch_size"   // requests per batch
	RoleStageTime   Role = "stage_time"   // mean ms per request, Curve.Stage set
	RoleGPUUtil     Role = "gpu_util"     // percent 0..100
	RoleGPUMemUsed  Role = "gpu_mem_used" // MiB
	RoleGPUMemFree  Role = "gpu_mem_free" // MiB
	RoleNodeCPU     Role = "node_cpu"     // busy fraction 0..1
	RoleNodeMemory  Role = "node_memory"  // used fraction 0..1
	RoleNodeNetwork Role = "node_network" // bytes/s received
	RoleKVCache     Role = "kv_cache"     // used fraction 0..1 (vLLM)
	// An LLM server's request length (vLLM, SGLang, TGI): its latency
	// grows with the tokens it reads and writes.
	RolePromptTokens Role = "prompt_tokens" // mean prompt tokens per request
	RoleOutputTokens Role = "output_tokens" // mean generated tokens per request
	// RoleTPOT is an LLM server's time per generated token after the
	// first (decode speed): it tells servers that slowed from requests
	// that got longer.
	RoleTPOT Role = "tpot" // ms per generated token
	// RoleTTFT is an LLM server's time to the first token: the queue and
	// the prefill. Risen while the decode speed and the answers' length
	// held, the time goes before decoding starts.
	RoleTTFT Role = "ttft" // ms to the first generated token
	// The pool's state (kube-state-metrics), model level: what acting on
	// a capacity cause needs to know. No cause is scored on them.
	RoleReplicas    Role = "replicas"     // desired replicas of the model's deployments
	RoleReplicasMin Role = "replicas_min" // the autoscalers' min replicas
	RoleReplicasMax Role = "replicas_max" // the autoscalers' max replicas
)

// Roles lists every role, in the order the timeline draws them.
var Roles = []Role{
	RoleLatencyP50, RoleLatencyP95, RoleLatencyP99, RoleLatencyMean, RoleQPS, RoleErrorRate, RoleQueue, RoleBatchSize,
	RoleStageTime, RoleGPUUtil, RoleGPUMemUsed, RoleGPUMemFree, RoleNodeCPU, RoleNodeMemory, RoleNodeNetwork, RoleKVCache,
	RolePromptTokens, RoleOutputTokens, RoleTPOT, RoleTTFT, RoleReplicas, RoleReplicasMin, RoleReplicasMax,
}

// Latency says whether a role is a request latency (a quantile or the
// mean).
func (r Role) Latency() bool {
	return r == RoleLatencyP50 || r == RoleLatencyP95 || r == RoleLatencyP99 || r == RoleLatencyMean
}

// PoolState says whether a role is the pool's state (replica counts and
// limits) rather than a load or resource curve: such curves are read for
// what they say, never scored as deviations.
func (r Role) PoolState() bool {
	return r == RoleReplicas || r == RoleReplicasMin || r == RoleReplicasMax
}

// Levels lists every level, from the whole fleet down.
var Levels = []Level{LevelFleet, LevelModel, LevelVersion, LevelReplica, LevelNode}

// DependencyStage is the stage prefix of a curve that times the calls to
// one dependency: a stage_time curve with Stage "downstream/vector-db" is
// the mean time of the calls to vector-db (pull maps a client metric's
// server label onto it with label_replace). The analysis names the
// dependency that slowed from these curves.
const DependencyStage = "downstream/"

// Curve is one time series of one role at one scope, sorted by time.
type Curve struct {
	Role   Role    `json:"role"`
	Level  Level   `json:"level"`
	Scope  Scope   `json:"scope"`
	Stage  string  `json:"stage,omitempty"`
	Points []Point `json:"points"`
}

// Key identifies the curve: role, level, stage and scope.
func (c Curve) Key() string {
	k := string(c.Role) + "|" + string(c.Level) + "|" + c.Scope.String()
	if c.Stage != "" {
		k += "|stage=" + c.Stage
	}
	return k
}
