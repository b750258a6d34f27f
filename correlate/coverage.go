package correlate

import (
	"fmt"
	"sort"
	"strings"
)

// Coverage says which data the analysis had for the models it judged, and
// so which causes it could not assess. Real fleets send partial data (no
// batch metrics, no DCGM, no samples yet); the reader must see what was
// missing before trusting what was concluded.
type Coverage struct {
	Models        []string         `json:"models"`  // the models described: the affected ones, or every model when none is
	Signals       []SignalCoverage `json:"signals"` // one per kind of signal, in a fixed order
	Samples       int              `json:"samples"` // request samples of all models in the analysis window (baseline and spike)
	Events        int              `json:"events"`  // change events in the window, pushed and derived
	NotAssessable []Category       `json:"not_assessable"`
	Summary       string           `json:"summary"` // one sentence: what was there, what was missing
}

// SignalCoverage is one kind of signal and whether the judged models had it.
type SignalCoverage struct {
	Signal  string `json:"signal"`           // stable name, e.g. "batch"
	Label   string `json:"label"`            // what it is, for people: "batch sizes or batch wait"
	Present bool   `json:"present"`          // at least one judged model has it
	Source  string `json:"source,omitempty"` // "curves", "samples" or "curves and samples"
	Models  int    `json:"models"`           // how many of the judged models have it
}

// The signals the coverage lists, in order. Each is what some cause needs
// as its key signal (see keySignals).
const (
	sigLatency       = "latency"
	sigTraffic       = "traffic"
	sigErrors        = "errors"
	sigVersions      = "versions"
	sigReplicas      = "replicas"
	sigNodes         = "nodes"
	sigStages        = "stages"
	sigBatch         = "batch"
	sigQueue         = "queue"
	sigDownstream    = "downstream"
	sigFront         = "front_stages"
	sigGPU           = "gpu"
	sigNodeResources = "node_resources"
)

var signalLabels = []struct{ name, label string }{
	{sigLatency, "latency quantiles"},
	{sigTraffic, "request rates"},
	{sigErrors, "error rates"},
	{sigVersions, "versions"},
	{sigReplicas, "per-replica data"},
	{sigNodes, "nodes"},
	{sigStages, "per-stage times"},
	{sigBatch, "batch sizes or batch wait"},
	{sigQueue, "queue lengths or queue time"},
	{sigDownstream, "downstream call time"},
	{sigFront, "gateway, auth and route times"},
	{sigGPU, "GPU metrics"},
	{sigNodeResources, "node CPU, memory and network"},
}

// presence records where a signal was seen: in curves, in samples.
type presence struct{ curves, samples bool }

func (p presence) any() bool { return p.curves || p.samples }

// modelData is which signals one model has.
type modelData map[string]presence

// dataIndex says, per model, which signals the input carries.
type dataIndex struct {
	models  map[string]modelData
	events  int
	samples int
}

func (d *dataIndex) mark(model, sig string, fromSamples bool) {
	md := d.models[model]
	if md == nil {
		md = modelData{}
		d.models[model] = md
	}
	p := md[sig]
	if fromSamples {
		p.samples = true
	} else {
		p.curves = true
	}
	md[sig] = p
}

// has reports whether model has the signal.
func (d *dataIndex) has(model, sig string) bool { return d.models[model][sig].any() }

// stageSignal maps a stage onto the signal it feeds ("" for none).
func stageSignal(stage string) string {
	if strings.HasPrefix(stage, DependencyStage) {
		return sigDownstream
	}
	switch stage {
	case "queue":
		return sigQueue
	case "batch_wait":
		return sigBatch
	case "downstream":
		return sigDownstream
	case "gateway", "auth", "route":
		return sigFront
	}
	return ""
}

// indexData records which signals every model has, from the curves (any
// level that names the model; GPU and node curves through the nodes the
// model's replicas run on) and the samples.
func indexData(cs *curveSet, ss *sampleSet) *dataIndex {
	d := &dataIndex{models: map[string]modelData{}, samples: len(ss.before) + len(ss.during)}
	d.indexCurves(cs)
	// Samples: flags per model first (hundreds of thousands of samples,
	// a handful of models), marked once at the end.
	flags := map[string]*sampleFlags{}
	var last string
	var fl *sampleFlags
	for i := range ss.all {
		s := &ss.all[i]
		if fl == nil || s.Model != last {
			if fl = flags[s.Model]; fl == nil {
				fl = &sampleFlags{}
				flags[s.Model] = fl
			}
			last = s.Model
		}
		fl.add(s)
	}
	for m, fl := range flags {
		fl.mark(d, m)
	}
	return d
}

// sampleFlags is which signals a model's samples carry.
type sampleFlags struct {
	status, version, replica, node, batch, dependency bool
	stages                                            [NumStages]bool
}

func (fl *sampleFlags) add(s *Sample) {
	fl.status = fl.status || s.Status != ""
	fl.version = fl.version || s.Version != ""
	fl.replica = fl.replica || s.Replica != ""
	fl.node = fl.node || s.Node != ""
	fl.batch = fl.batch || s.BatchSize > 0
	fl.dependency = fl.dependency || s.Dependency != ""
	// A stage is timed once one sample gives it time: servers that do not
	// time a stage report 0 (or nothing), which is no measurement.
	for k, v := range s.StagesMs {
		if v > 0 {
			fl.stages[k] = true
		}
	}
}

func (fl *sampleFlags) mark(d *dataIndex, m string) {
	d.mark(m, sigLatency, true)
	d.mark(m, sigTraffic, true)
	for _, f := range []struct {
		sig string
		has bool
	}{{sigErrors, fl.status}, {sigVersions, fl.version}, {sigReplicas, fl.replica}, {sigNodes, fl.node}, {sigBatch, fl.batch}, {sigDownstream, fl.dependency}} {
		if f.has {
			d.mark(m, f.sig, true)
		}
	}
	for k, has := range fl.stages {
		if !has {
			continue
		}
		d.mark(m, sigStages, true)
		if sig := stageSignal(Stage(k).String()); sig != "" {
			d.mark(m, sig, true)
		}
	}
}

// indexCurves marks the signals of every model-scoped curve, gives each
// model the signals of node curves on the nodes its replicas run on, and
// every model the front stages' times of fleet-level stage curves.
func (d *dataIndex) indexCurves(cs *curveSet) {
	nodeModels := map[string]map[string]bool{}
	nodeRoles := map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	fleetFront := false
	for i := range cs.all {
		c := &cs.all[i]
		if len(c.Points) == 0 {
			continue
		}
		m := c.Scope.Model
		if m == "" {
			if c.Scope.Node != "" {
				add(nodeRoles, c.Scope.Node, curveSignal(c))
			}
			// A gateway shared by every model, timed once for the fleet.
			fleetFront = fleetFront || c.Level == LevelFleet && c.Role == RoleStageTime && stageSignal(c.Stage) == sigFront
			continue
		}
		// A stage that reads 0 at every point is not timed (or not called):
		// servers that do not time a stage export it as 0, as in samples.
		if sig := curveSignal(c); sig != "" && (c.Role != RoleStageTime || !allZero(c.Points)) {
			d.mark(m, sig, false)
		}
		if c.Scope.Version != "" {
			d.mark(m, sigVersions, false)
		}
		if c.Level == LevelReplica && c.Scope.Replica != "" {
			d.mark(m, sigReplicas, false)
		}
		if c.Scope.Node != "" {
			d.mark(m, sigNodes, false)
			add(nodeModels, c.Scope.Node, m)
		}
	}
	for node, roles := range nodeRoles {
		for m := range nodeModels[node] {
			for sig := range roles {
				if sig != "" {
					d.mark(m, sig, false)
				}
			}
		}
	}
	if fleetFront {
		for m := range d.models {
			d.mark(m, sigFront, false)
		}
	}
}

// curveSignal is the signal a curve feeds.
func curveSignal(c *Curve) string {
	switch c.Role {
	case RoleLatencyP50, RoleLatencyP95, RoleLatencyP99, RoleLatencyMean:
		return sigLatency
	case RoleQPS:
		return sigTraffic
	case RoleErrorRate:
		return sigErrors
	case RoleQueue:
		return sigQueue
	case RoleBatchSize:
		return sigBatch
	case RoleStageTime:
		if sig := stageSignal(c.Stage); sig != "" {
			return sig
		}
		return sigStages
	case RoleGPUUtil, RoleGPUMemUsed, RoleGPUMemFree, RoleKVCache:
		return sigGPU
	case RoleNodeCPU, RoleNodeMemory, RoleNodeNetwork:
		return sigNodeResources
	}
	return ""
}

// keySignals are, per category, the signals without which the hypothesis
// cannot be judged at all (any one of them suffices), with the words that
// say what is missing. A cause scored without its key signal would only
// repeat generic facts ("traffic steady", "one model") as if they were
// evidence.
var keySignals = map[Category]struct {
	any     []string
	missing string
}{
	CatRelease:      {[]string{sigVersions}, "no version on curves or samples and no deploy event"},
	CatCapacity:     {[]string{sigTraffic}, "no request-rate curve and no samples"},
	CatLocalReplica: {[]string{sigReplicas}, "fewer than two replicas whose latency is known (per-replica latency curves or samples naming replicas)"},
	CatBatching:     {[]string{sigBatch}, "no batch-size curve and no batch-wait stage time"},
	CatColdStart:    {nil, "no replica_start or scale_up event and no per-replica curves"},
	CatDownstream:   {[]string{sigDownstream}, "no downstream stage time (stage curves or samples' stages_ms)"},
	CatRouting:      {[]string{sigReplicas}, "no per-replica request rates"},
	CatIngress:      {[]string{sigFront}, "no gateway, auth or route stage times"},
}

// assessableModels returns the affected models whose data carries a
// category's key signal. Release also counts a deploy event of the model,
// cold start a replica start or scale-up: events are evidence of their own.
func (f *facts) assessableModels(cat Category) []string {
	var out []string
	for _, m := range f.affected {
		if f.hasKeySignal(cat, m) {
			out = append(out, m)
		}
	}
	return out
}

func (f *facts) hasKeySignal(cat Category, m string) bool {
	if cat == CatLocalReplica {
		// A replica stands out only from peers: one replica, or replicas
		// known by their request rates alone, compare nothing.
		return f.peersKnown(m)
	}
	for _, sig := range keySignals[cat].any {
		if f.data.has(m, sig) {
			return true
		}
	}
	switch cat {
	case CatRelease:
		return f.hasEvent(m, KindDeploy, KindRollback)
	case CatColdStart:
		// Samples name replicas but cannot tell when one started: that
		// takes replica curves (their first points) or start events.
		return f.data.models[m][sigReplicas].curves || f.hasEvent(m, KindScaleUp, KindReplicaStart) || len(f.startedNear(m, coldWindow)) > 0
	}
	return false
}

// hasEvent reports whether an aligned event of the kinds names model m.
func (f *facts) hasEvent(m string, kinds ...EventKind) bool {
	for _, e := range f.events {
		for _, k := range kinds {
			if e.Kind == k && e.Model == m {
				return true
			}
		}
	}
	return false
}

// judged are the models the causes are about: the affected ones, or every
// model with data when none is.
func (f *facts) judged() []string {
	if len(f.affected) > 0 {
		return f.affected
	}
	var out []string
	for _, m := range f.models {
		out = append(out, m.model)
	}
	return out
}

// notAssessable says why a category cannot be judged, or "" when it can:
// none of the judged models carries its key signal.
func (f *facts) notAssessable(cat Category) string {
	for _, m := range f.judged() {
		if f.hasKeySignal(cat, m) {
			return ""
		}
	}
	if len(f.judged()) == 0 {
		return ""
	}
	return fmt.Sprintf("not assessable: %s for %s", keySignals[cat].missing, list(f.judged()))
}

// coverage describes the data of the judged models.
func (f *facts) coverage(na []NotAssessable) Coverage {
	models := append([]string(nil), f.judged()...)
	cv := Coverage{Models: models, Samples: f.data.samples, Events: f.data.events, NotAssessable: []Category{}}
	if cv.Models == nil {
		cv.Models = []string{}
	}
	var have, missing []string
	for _, s := range signalLabels {
		sc := SignalCoverage{Signal: s.name, Label: s.label}
		var curves, samples bool
		for _, m := range models {
			p := f.data.models[m][s.name]
			if p.any() {
				sc.Models++
			}
			curves = curves || p.curves
			samples = samples || p.samples
		}
		sc.Present = sc.Models > 0
		switch {
		case curves && samples:
			sc.Source = "curves and samples"
		case curves:
			sc.Source = "curves"
		case samples:
			sc.Source = "samples"
		}
		if sc.Present {
			have = append(have, s.label)
		} else {
			missing = append(missing, s.label)
		}
		cv.Signals = append(cv.Signals, sc)
	}
	for _, n := range na {
		cv.NotAssessable = append(cv.NotAssessable, n.Category)
	}
	var b strings.Builder
	switch {
	case len(missing) == 0:
		b.WriteString("Every kind of signal is present. ")
	case len(have) > 0:
		fmt.Fprintf(&b, "Present: %s. ", strings.Join(have, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "Missing: %s. ", strings.Join(missing, ", "))
	}
	// Which samples: the page shows other counts of them (its view's
	// window, the sample table's), which must not read as contradicting.
	fmt.Fprintf(&b, "%s%s, %s.", capitalize(plural(cv.Samples, "request sample")), f.samplesSpan(cv.Samples), plural(cv.Events, "change event"))
	if len(na) > 0 {
		var names []string
		for _, n := range na {
			names = append(names, string(n.Category))
		}
		sort.Strings(names)
		fmt.Fprintf(&b, " Not assessable: %s.", strings.Join(names, ", "))
	}
	cv.Summary = b.String()
	return cv
}

// plural renders "no samples", "1 sample", "12,345 samples".
func plural(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun + "s"
	case 1:
		return "1 " + noun
	}
	return fmtCount(float64(n)) + " " + noun + "s"
}

// fmtCount renders a count with thousands separators.
func fmtCount(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// samplesNameReplicas reports whether the affected models' samples say
// which replica or node served them: only then can "no replica stands out
// among the slow requests" be said.
func (f *facts) samplesNameReplicas() bool {
	for _, m := range f.affected {
		if f.data.models[m][sigReplicas].samples || f.data.models[m][sigNodes].samples {
			return true
		}
	}
	return false
}

// localKnown reports whether any affected model has replicas to compare
// (see peersKnown).
func (f *facts) localKnown() bool {
	for _, m := range f.affected {
		if f.peersKnown(m) {
			return true
		}
	}
	return false
}

// peersKnown reports whether model m has at least two replicas whose
// latency during the spike is known, from replica curves or enough of
// their samples, or samples naming at least two replicas with enough slow
// ones among them (minSlowToJudge, as the concentration table needs) to
// tell whether they concentrate: two samples on two replicas cannot say
// "no replica stands out".
func (f *facts) peersKnown(m string) bool {
	if judgedReplicas(f.allReps[m]) >= 2 {
		return true
	}
	st := f.ss.byModel[m]
	if st == nil {
		return false
	}
	first, two, slow := "", false, 0
	for _, i := range st.phase[1] {
		if f.ss.slow[i] {
			slow++
		}
		if r := f.ss.all[i].Replica; r != "" {
			if first == "" {
				first = r
			} else if r != first {
				two = true
			}
		}
	}
	return two && slow >= minSlowToJudge
}

// supportNotLocal adds "nothing local explains it" when per-replica data
// could have shown a local cause and did not. It tells fleet-wide causes
// from local ones, not one fleet-wide cause from another: it corroborates.
func (f *facts) supportNotLocal(b *causeBuilder, summary string) {
	if !f.localKnown() {
		return // nothing to stand out from
	}
	if outs, _ := f.outlierReplicas(); len(outs) > 0 || f.sickNode() != nil {
		return // the replica curves show one standing out, whatever the samples say
	}
	if loc, ok := f.topLocal(); ok {
		b.corroborate("not_local", 1-concStrength(loc), 1-concStrength(loc), 0.10, "%s", summary)
	} else if f.localKnown() {
		b.corroborate("not_local", 1, 1, 0.10, "%s", summary)
	}
}

// allZero reports whether every point reads 0.
func allZero(pts []Point) bool {
	for _, p := range pts {
		if p.V != 0 {
			return false
		}
	}
	return true
}

// samplesSpan says which request samples the analysis counted: every
// model's, from the start of the baseline to the end of the spike's
// analysed part. "" for hand-built facts, or with no sample.
func (f *facts) samplesSpan(n int) string {
	if f.ss == nil || n == 0 || f.ss.ph.DuringTo.IsZero() {
		return ""
	}
	p := f.ss.ph
	return fmt.Sprintf(" of all models in the analysis window (%s–%s UTC: before and during the spike)",
		p.BeforeFrom.UTC().Format("15:04"), p.DuringTo.UTC().Format("15:04"))
}

// spikeSpan is the spike's analysed part, ", 18:03–18:33 UTC": the
// sample counts of the spike cover it, not the page's whole window. ""
// for hand-built facts.
func (f *facts) spikeSpan() string {
	if f.ss == nil || f.ss.ph.DuringTo.IsZero() {
		return ""
	}
	p := f.ss.ph
	return fmt.Sprintf(", %s–%s UTC", p.Onset.UTC().Format("15:04"), p.DuringTo.UTC().Format("15:04"))
}
