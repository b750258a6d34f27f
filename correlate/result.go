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
	DetectedAt time.Time `json:"detected_at"`     // when a live run would have raised it
	Score      float64   `json:"score"`           // peak robust z
	Severity   string    `json:"severity"`        // "page", "ticket" or "info" against the SLO
	SLOMs      float64   `json:"slo_ms,omitempty"` // the SLO used for Severity, if any
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
}

// Cause is one scored hypothesis.
type Cause struct {
	Category        Category   `json:"category"`
	Score           float64    `json:"score"` // 0..1
	Target          Target     `json:"target"`
	Summary         string     `json:"summary"`
	Evidence        []Evidence `json:"evidence"`
	CounterEvidence []Evidence `json:"counter_evidence"`
	Actions         []string   `json:"actions"`
}
