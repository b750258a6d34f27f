package correlate

import "time"

// Category is one of the eight cause categories of DESIGN §5.
type Category string

// The cause categories, plus Unexplained when no hypothesis is strong.
const (
	CatRelease      Category = "release"
	CatCapacity     Category = "capacity"
	CatLocalReplica Category = "local_replica"
	CatBatching     Category = "batching"
	CatColdStart    Category = "cold_start"
	CatDownstream   Category = "downstream"
	CatRouting      Category = "routing"
	CatIngress      Category = "ingress"
	CatUnexplained  Category = "unexplained"
)

// Categories lists the eight real categories in the order the UI lists them.
var Categories = []Category{CatRelease, CatCapacity, CatLocalReplica, CatBatching, CatColdStart, CatDownstream, CatRouting, CatIngress}

// Direction of a spike relative to its baseline.
type Direction string

// Spike directions; latency spikes go up, QPS drops go down.
const (
	Up   Direction = "up"
	Down Direction = "down"
	Both Direction = "both"
)

// Spike is a sustained departure of a curve from its robust baseline.
type Spike struct {
	Role       Role      `json:"role,omitempty"`
	Level      Level     `json:"level,omitempty"`
	Scope      Scope     `json:"scope"`
	Series     string    `json:"series,omitempty"` // label set for ad-hoc PromQL spikes
	Start      time.Time `json:"start"`            // first point over the threshold
	End        time.Time `json:"end"`              // last point before it returned to baseline (or the data end)
	Ongoing    bool      `json:"ongoing"`          // the data ended during the spike
	Onset      time.Time `json:"onset"`            // change-point estimate of when it began
	PeakTime   time.Time `json:"peak_time"`
	PeakValue  float64   `json:"peak_value"`
	Baseline   float64   `json:"baseline"`
	Direction  Direction `json:"direction"`
	DetectedAt time.Time `json:"detected_at"` // when a live run would have raised it
	Score      float64   `json:"score"`       // 0..1: how far past its threshold it went (0.5 at the threshold)
	Z          float64   `json:"z"`           // peak robust z
	// PeakAtCeiling: the spike's curve is a latency quantile pinned at
	// its histogram's highest finite bucket bound (QuantileCeiling), and
	// the peak is that bound: the true peak was higher, PeakValue and its
	// ratio to Baseline are lower bounds.
	PeakAtCeiling bool `json:"peak_at_ceiling,omitempty"`
	// BaselineKind says what the spike was judged against: "trailing"
	// (the recent median), "seasonal" (the same time on previous days,
	// moved to the recent level), "weekly" (the same time of the week on
	// previous weeks, moved likewise) or "window" (an incident window's
	// own trailing hour, when locating an onset) or "before_change" (the
	// level before a change, see ChangeRegression).
	BaselineKind string  `json:"baseline_kind,omitempty"`
	Severity     string  `json:"severity"`         // "page", "ticket" or "info" against the SLO
	SLOMs        float64 `json:"slo_ms,omitempty"` // the SLO used for Severity, if any
}

// Target says what a cause points at; fields follow DESIGN §4.
type Target struct {
	Model    string   `json:"model,omitempty"`
	Version  string   `json:"version,omitempty"`
	Tenant   string   `json:"tenant,omitempty"`
	Replica  string   `json:"replica,omitempty"`
	Node     string   `json:"node,omitempty"`
	Replicas []string `json:"replicas,omitempty"`
	Models   []string `json:"models,omitempty"`
	// Dependency is the downstream dependency a downstream cause names,
	// when samples or curves carry one.
	Dependency string `json:"dependency,omitempty"`
}

// Evidence is one named, measured fact for or against a hypothesis. Weight
// times Strength is what it adds to (or, for counter-evidence, takes from)
// the cause's score, so every score can be explained item by item.
type Evidence struct {
	Name     string  `json:"name"`     // stable identifier, e.g. "deploy_before_onset"
	Summary  string  `json:"summary"`  // one human sentence with the measured values
	Value    float64 `json:"value"`    // the measured value the strength came from
	Strength float64 `json:"strength"` // 0..1
	Weight   float64 `json:"weight"`   // contribution per unit of strength
	Link     string  `json:"link,omitempty"`
	// What the item rests on, so every surface can point at the same fact:
	// a change event (its id), a curve (its key), a concentration row
	// (its dims).
	Event string            `json:"event,omitempty"`
	Curve string            `json:"curve,omitempty"`
	Row   map[string]string `json:"row,omitempty"`
}

// Cause is one scored hypothesis.
type Cause struct {
	Category        Category   `json:"category"`
	Score           float64    `json:"score"` // 0..1; unexplained's is 1 − the best cause's (how far it falls short)
	Target          Target     `json:"target"`
	Summary         string     `json:"summary"`
	Evidence        []Evidence `json:"evidence"`
	CounterEvidence []Evidence `json:"counter_evidence"`
	Actions         []string   `json:"actions"`
}

// NotAssessable is a cause category the analysis could not judge because
// its key signal is missing from the data (no batch metrics for batching,
// no per-replica data for a local fault, …). It has no score and is listed
// apart from the ranked causes: "no evidence" is not "ruled out".
type NotAssessable struct {
	Category Category `json:"category"`
	Reason   string   `json:"reason"` // "not assessable: no batch-size curve … for chat"
}

// StageShare says how much of the latency increase one stage explains.
type StageShare struct {
	Stage     string  `json:"stage"`
	BeforeMs  float64 `json:"before_ms"`   // typical time of slow requests before the onset
	DuringMs  float64 `json:"during_ms"`   // the same during the spike
	DeltaMs   float64 `json:"delta_ms"`    // DuringMs − BeforeMs
	DeltaLoMs float64 `json:"delta_lo_ms"` // bootstrap interval of DeltaMs
	DeltaHiMs float64 `json:"delta_hi_ms"`
	Share     float64 `json:"share"` // of the growth (the positive deltas, or the total's growth when larger), 0..1
}

// Concentration is one dimension value (or pair) over-represented among
// slow samples: BubbleUp's selection-vs-baseline row. Values of other
// dimensions that select exactly the same requests are folded into the
// row (Also), so one cause is one row.
type Concentration struct {
	Dims         map[string]string `json:"dims"`             // e.g. {"replica": "r-7"} or two entries for a pair
	Also         map[string]string `json:"also,omitempty"`   // equivalent values: same requests, other dimensions
	Label        string            `json:"label"`            // "version=v3.2.0 ≡ model=rerank-base ≡ entry=/v1/rerank"
	SelectionPct float64           `json:"selection_pct"`    // share of slow samples with it, 0..100
	BaselinePct  float64           `json:"baseline_pct"`     // share of the other samples with it
	RiskRatio    float64           `json:"risk_ratio"`       // P(slow | value) / P(slow | not value)
	Support      float64           `json:"support"`          // fraction of slow samples covered, 0..1
	Models       []string          `json:"models,omitempty"` // the models whose traffic the P99s below are computed over
	P99Ms        float64           `json:"p99_ms"`           // P99 of those models' requests during the spike
	P99WithoutMs float64           `json:"p99_without_ms"`   // their P99 if these requests were removed (0 when nothing would remain)
	P99DeltaMs   float64           `json:"p99_delta_ms"`     // P99Ms minus P99WithoutMs
	TailShare    float64           `json:"tail_share"`       // share of the P99's rise over those models' baseline that removing them undoes, 0..1
	Count        float64           `json:"count"`            // weighted slow samples with the value
}

// ScopeReport is the article's step 1: which part of the fleet carries
// the spike, and whether it is narrow or broad.
//
// Every list is ordered by impact, hardest hit first, and has a parallel
// list of entries (same order) that gives the impact.
type ScopeReport struct {
	Breadth       string       `json:"breadth"` // "fleet", "models", "model", "version", "replicas" or "none"
	Summary       string       `json:"summary"` // one sentence
	Models        []string     `json:"models"`  // models whose latency rose
	Versions      []string     `json:"versions,omitempty"`
	Replicas      []string     `json:"replicas,omitempty"`
	Nodes         []string     `json:"nodes,omitempty"`
	Tenants       []string     `json:"tenants,omitempty"`
	ModelImpact   []ScopeEntry `json:"model_impact,omitempty"`
	VersionImpact []ScopeEntry `json:"version_impact,omitempty"`
	ReplicaImpact []ScopeEntry `json:"replica_impact,omitempty"`
	NodeImpact    []ScopeEntry `json:"node_impact,omitempty"`
	TenantImpact  []ScopeEntry `json:"tenant_impact,omitempty"`
}

// ScopeEntry is one member of a scope list and how hard it was hit.
type ScopeEntry struct {
	Name        string  `json:"name"`
	Model       string  `json:"model,omitempty"`         // the model of a replica or a version
	P99BeforeMs float64 `json:"p99_before_ms,omitempty"` // absent when unknown
	P99DuringMs float64 `json:"p99_during_ms,omitempty"`
	P99Ratio    float64 `json:"p99_ratio,omitempty"` // during / before; a new replica's P99 over its peers'; absent when unknown
	// Quantile is set ("P95", "mean") when a model's P99 fields hold
	// another measure: it had a P95 curve and no P99, or only a mean.
	Quantile  string   `json:"quantile,omitempty"`
	SlowShare *float64 `json:"slow_share,omitempty"` // share of the incident's slow requests (affected models, during), 0..1; absent without samples
	// TrafficShare is a tenant's or entry's share of all its model's
	// requests during the spike (impact lists only), 0..1.
	TrafficShare *float64 `json:"traffic_share,omitempty"`
	// ceiling is a model's latency quantile's ceiling (facts.ceiling),
	// for the summary's words: a P99DuringMs at it makes P99Ratio a lower
	// bound. Not serialised; Impact.CeilingMs carries it.
	ceiling float64
}

// AlignedEvent is an event with its weight for the analysis: how close it
// came before the onset and how well its scope matches.
type AlignedEvent struct {
	Event
	OffsetS    float64 `json:"offset_s"`    // event time minus onset, seconds
	TimeWeight float64 `json:"time_weight"` // 0..1
	ScopeMatch float64 `json:"scope_match"` // 0..1
	// blurS is the data's step when it is coarser than the alignment's
	// skew: an event within it of the onset may have come before or after
	// the rise. Only the sentences written during the analysis read it.
	blurS float64
	// gapFrom, when set, starts a hole in the onset's latency curve that
	// ends at the onset: the rise came somewhere in it, so an event is
	// timed against the hole, not against the onset.
	gapFrom time.Time
}

// CurveDeviation is one curve's robust deviation after the onset.
type CurveDeviation struct {
	Key       string  `json:"key"`
	Role      Role    `json:"role"`
	Level     Level   `json:"level"`
	Scope     Scope   `json:"scope"`
	Stage     string  `json:"stage,omitempty"`
	Before    float64 `json:"before"`    // median before the onset
	During    float64 `json:"during"`    // median after the onset
	Ratio     float64 `json:"ratio"`     // During / Before (0 when Before is not positive)
	Extreme   float64 `json:"extreme"`   // the value after the onset furthest from Before (median of 3 points)
	Deviation float64 `json:"deviation"` // signed max |x−median|/IQR after the onset, the IQR floored by level, resolution and role
	Score     float64 `json:"score"`     // 0..1, comparable across curves: the excursion against the curve's own largest baseline excursions
}

// Window is a half-open time range.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Analysis is the result of analysing one incident window; it is what
// GET /api/v1/incidents/{id}/analysis returns (with its status) and what
// snapshots freeze. Headline, Impact, Scope, Causes, Reconciliation and
// Checklist are one story: every surface (page, export, API summary,
// webhook) quotes them rather than recomputing, so they cannot disagree.
type Analysis struct {
	Window Window     `json:"window"`
	Onset  *time.Time `json:"onset"`
	// OnsetGapFrom is set when the onset's latency curve has no points
	// from this time to the onset (a scrape outage, a failed pull): the
	// rise came somewhere in between, and Onset is when it was first seen.
	OnsetGapFrom   *time.Time `json:"onset_gap_from,omitempty"`
	Headline       Headline   `json:"headline"`
	Impact         []Impact   `json:"impact"`                   // per affected model, hardest hit first
	Reconciliation string     `json:"reconciliation,omitempty"` // when the concentration and the top cause seem to disagree, why they do not

	Spikes        []Spike         `json:"spikes"`
	Scope         ScopeReport     `json:"scope"`
	Causes        []Cause         `json:"causes"`         // sorted by score; only categories the data lets us judge
	NotAssessable []NotAssessable `json:"not_assessable"` // categories whose key signal is missing, not ranked
	Coverage      Coverage        `json:"coverage"`       // which signals the judged models had
	Stages        []StageShare    `json:"stages"`
	StageSource   string          `json:"stage_source"` // "samples", "curves" or "" (no data)
	// StageModels are the models whose requests (or stage curves) Stages
	// pools: a request compares with them only when they are its model.
	StageModels   []string            `json:"stage_models,omitempty"`
	Concentration []Concentration     `json:"concentration"`
	Events        []AlignedEvent      `json:"events"`
	Deviations    []CurveDeviation    `json:"deviations"`
	Replicas      []ReplicaComparison `json:"replicas"`
	Pools         []Pool              `json:"pools,omitempty"` // the affected models' desired replicas and autoscaler limits, where kube-state-metrics has them
	// RequestLengths are the affected models' prompt and generated tokens
	// per request, time per generated token and time to the first token
	// before and after the onset, where any of them is in the data (an LLM
	// server's metrics).
	RequestLengths []RequestLength `json:"request_lengths,omitempty"`
	P99BeforeMs    float64         `json:"p99_before_ms"` // the headline model's
	P99DuringMs    float64         `json:"p99_during_ms"`
	Samples        SampleSummary   `json:"samples"`
	Checklist      []ChecklistStep `json:"checklist"`
}

// SampleSummary counts the samples the analysis used. Every count of slow
// requests the analysis gives comes from here: SlowRequests is the
// incident's slow requests (the affected models', during the spike,
// re-weighted); the impact blocks split it per model, the scope entries'
// and concentration rows' shares are shares of it.
type SampleSummary struct {
	Total        int                `json:"total"`            // stored samples before and during the spike
	Weighted     float64            `json:"weighted"`         // requests they represent (re-weighted by sample_rate)
	During       *int               `json:"during,omitempty"` // samples of the affected models during the spike (all models when none is); nil in analyses stored before it was counted
	Slow         int                `json:"slow"`             // slow samples of the affected models during the spike (all models when none is)
	SlowRequests float64            `json:"slow_requests"`    // the requests those represent: the incident's slow requests
	SlowMs       map[string]float64 `json:"slow_ms"`          // per model: the slowness threshold used
	// SlowBasis is what Slow and SlowRequests were judged against:
	// SlowBasisBaseline, SlowBasisSpikeTail (a tenth of the samples by
	// construction, no count of slow requests), or SlowBasisMixed (some
	// models' part is their own slowest tenth; see Impact.SlowBasis).
	// Empty with no slow sample counted, and in analyses stored before it.
	SlowBasis string `json:"slow_basis,omitempty"`
	// Tokens compares the generated tokens of the slow requests with the
	// others' (same models, same window), where the samples carry them:
	// are the slow requests just the long ones?
	Tokens *SampleTokens `json:"tokens,omitempty"`
}

// SampleTokens is the slow requests' generated tokens against the other
// requests' during the spike (weighted medians, of the samples that
// carry a count), and the time each took per generated token (total
// latency ÷ tokens, queue and prefill included): a slow request that is
// long at the usual speed per token is slow because it is long.
type SampleTokens struct {
	// Model is the model whose requests are compared: one model's, as
	// models' lengths differ (a slow model of long answers against a fast
	// one of short answers is no sign of length).
	Model             string  `json:"model,omitempty"`
	Slow              int     `json:"slow"`  // slow samples with a count
	Other             int     `json:"other"` // other samples with a count
	SlowOutputTokens  float64 `json:"slow_output_tokens"`
	OtherOutputTokens float64 `json:"other_output_tokens"`
	SlowMsPerToken    float64 `json:"slow_ms_per_token"`
	OtherMsPerToken   float64 `json:"other_ms_per_token"`
	// BeforeMsPerToken is the time per token of the model's requests of
	// the slow ones' length (half to twice their median) before the onset,
	// Before how many were sampled (absent under minSlowToJudge): the slow
	// requests' own speed is judged against it, as the others during the
	// spike were slowed by it too, and long requests spread their queue and
	// prefill over more tokens than short ones.
	BeforeMsPerToken float64 `json:"before_ms_per_token,omitempty"`
	Before           int     `json:"before,omitempty"`
}

// What a count of slow requests was judged against.
const (
	// SlowBasisBaseline: the model's P99 before the onset (its samples'
	// or a P99 curve's), or its SLO when higher.
	SlowBasisBaseline = "baseline"
	// SlowBasisSpikeTail: no baseline, so the spike's own P90 is the
	// cut-off and a tenth of its requests are "slow" whatever happened.
	SlowBasisSpikeTail = "spike_tail"
	// SlowBasisMixed: some of the models counted have a baseline, some not.
	SlowBasisMixed = "mixed"
)

// ChecklistStep answers one step of the article's checklist (scope →
// timeline → samples → action). A step that quotes a fact of the top cause
// says which: the evidence item, and the event, curve or concentration row
// it rests on.
type ChecklistStep struct {
	Step     string            `json:"step"`
	Answer   string            `json:"answer"`
	Evidence string            `json:"evidence,omitempty"` // name of the top cause's evidence item quoted
	Event    string            `json:"event,omitempty"`    // id of the event quoted
	Curve    string            `json:"curve,omitempty"`    // key of the curve quoted
	Row      map[string]string `json:"row,omitempty"`      // dims of the concentration row quoted
	// Fallback: no row matches what the top cause names, so Row is the
	// one explaining most of the tail (every surface says so; see RowLead).
	Fallback bool `json:"fallback,omitempty"`
}

// ReplicaComparison is one replica of an affected model against its peers
// at the same time (the article's "is it one replica or all of them?").
type ReplicaComparison struct {
	Replica     string  `json:"replica"`
	Model       string  `json:"model"`
	Version     string  `json:"version,omitempty"`
	Node        string  `json:"node,omitempty"`
	P99BeforeMs float64 `json:"p99_before_ms"`
	P99DuringMs float64 `json:"p99_during_ms"`
	PeerP99Ms   float64 `json:"peer_p99_ms"` // median P99 of the other replicas during
	PeerZ       float64 `json:"peer_z"`      // robust z against them
	LoadBefore  float64 `json:"load_before"` // QPS over the mean of live replicas (1 = fair share)
	LoadDuring  float64 `json:"load_during"`
	Young       bool    `json:"young"`   // started shortly before the onset
	Outlier     bool    `json:"outlier"` // stands out from its peers
}

// Headline is the incident in one line: the model hit hardest (the
// largest P99 rise) and what happened to it.
type Headline struct {
	Model string `json:"model"` // "" when no model's latency rose
	Title string `json:"title"` // "P99 latency up ×3.0 on chat-8b"
	// Summary: the model's P99 baseline → peak, whether it recovered, and
	// the most likely cause.
	Summary string `json:"summary"`
}

// Impact is how hard one affected model was hit: what a header, an
// export, a ticket or a chat message quotes about it.
type Impact struct {
	Model         string     `json:"model"`
	BaselineP99Ms float64    `json:"baseline_p99_ms"` // median P99 in the hour before the onset
	DuringP99Ms   float64    `json:"during_p99_ms"`   // median P99 over the spike's main part
	PeakP99Ms     float64    `json:"peak_p99_ms"`     // highest P99 after the onset (median of 3 points, so not one bad scrape)
	PeakAt        *time.Time `json:"peak_at"`
	NowP99Ms      float64    `json:"now_p99_ms"` // the last P99 of the window
	NowAt         *time.Time `json:"now_at"`
	Rise          float64    `json:"rise"` // DuringP99Ms / BaselineP99Ms (the scope's P99 ratio)
	// CeilingMs is set when the curve the figures are read on is pinned
	// at its histogram's highest finite bucket bound after the onset
	// (QuantileCeiling): a figure equal to it (AtCeiling) — the peak, the
	// median during, and then Rise — is a lower bound.
	CeilingMs float64 `json:"ceiling_ms,omitempty"`
	// Quantile is the latency measure the *P99Ms fields hold: "P99",
	// "P95" for a model measured by a P95 curve alone, or "mean" for one
	// measured by its mean alone (Triton without its summary).
	Quantile     string     `json:"quantile"`
	Status       string     `json:"status"`                 // "ongoing" or "recovered"
	RecoveredAt  *time.Time `json:"recovered_at,omitempty"` // when its P99 came back near the baseline, to stay
	SlowRequests float64    `json:"slow_requests"`          // its share of SampleSummary.SlowRequests (0 without samples)
	// SlowBasis: SlowBasisBaseline, or SlowBasisSpikeTail when SlowRequests
	// is the model's own slowest tenth for want of a baseline. Empty
	// without samples of the model.
	SlowBasis string       `json:"slow_basis,omitempty"`
	Tenants   []ScopeEntry `json:"tenants,omitempty"` // tenants hit, by share of its slow requests
	Entries   []ScopeEntry `json:"entries,omitempty"` // entry points hit, the same way
	SLO       *SLOImpact   `json:"slo,omitempty"`     // when the model has a latency SLO
}

// SLOImpact is what the incident cost against a latency SLO, read as a P99
// objective: at most 1 % of requests slower than the SLO, over 30 days.
type SLOImpact struct {
	SLOMs        float64  `json:"slo_ms"`
	MinutesOver  float64  `json:"minutes_over"`            // minutes the P99 curve spent over the SLO after the onset
	BadRequests  *float64 `json:"bad_requests,omitempty"`  // requests slower than the SLO during the spike (needs samples)
	BurnRate     *float64 `json:"burn_rate,omitempty"`     // their share over the allowed 1 %
	BudgetBurned *float64 `json:"budget_burned,omitempty"` // share of a 30-day error budget they used (0..1+)
}
