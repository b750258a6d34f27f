package pull

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waterline-dev/waterline/correlate"
)

// fileYAML is the shape of WATERLINE_CONFIG and of the embedded presets.
//
//	presets: [inference, vllm]      # default [inference]; [] for none
//	disable: [inference/error_rate@model]
//	step: 15s                        # also lookback, delay, overlap, max_chunk
//	rate_window: auto                # rate() window of the presets: auto (two scrape intervals, ≥ 1m) or 2m
//	parallelism: 4
//	kube_events: {model_label: label_app, model_from_deployment: '^(.+)-server$'}
//	match: {cluster: prod-eu}        # only the series with these labels
//	queries:
//	  - {role: latency_p99, level: model, labels: {model: service},
//	     expr: 'histogram_quantile(0.99, sum by (le, service) (rate(x_bucket[1m]))) * 1000'}
//	slos:
//	  tiers: {realtime: 300, search: 150, batch: 5000}   # ms, or "300ms"
//	  models: {chat-7b: realtime, vision-xl: 650}
//	  default: batch
type fileYAML struct {
	Presets     *[]string `yaml:"presets"`
	Include     []string  `yaml:"include"` // presets only
	Disable     []string  `yaml:"disable"`
	Step        *durYAML  `yaml:"step"`
	Lookback    *durYAML  `yaml:"lookback"`
	Delay       *durYAML  `yaml:"delay"`
	Overlap     *durYAML  `yaml:"overlap"`
	MaxChunk    *durYAML  `yaml:"max_chunk"`
	RateWindow  *rateYAML `yaml:"rate_window"`
	Parallelism *int      `yaml:"parallelism"`
	// ModelAliases maps model names as exporters give them (vLLM's served
	// name, a path by default) onto the fleet's (pod labels, deployments).
	ModelAliases map[string]string `yaml:"model_aliases"`
	// Match restricts every query to the series with these labels
	// (match.go): one cluster or environment of a shared Prometheus.
	Match   map[string]string `yaml:"match"`
	Kube    *kubeYAML         `yaml:"kube_events"`
	Queries []queryYAML       `yaml:"queries"`
	SLOs    *slosYAML         `yaml:"slos"`
	// OTLP is the span mapping of the trace receiver, read by package
	// otlp from the same file; pull only lets it through.
	OTLP yaml.Node `yaml:"otlp"`
}

type kubeYAML struct {
	Enabled             *bool      `yaml:"enabled"`
	ModelLabel          labelsYAML `yaml:"model_label"`
	VersionLabel        labelsYAML `yaml:"version_label"`
	ModelFromDeployment string     `yaml:"model_from_deployment"`
	MergeWindow         *durYAML   `yaml:"merge_window"`
}

type slosYAML struct {
	Tiers   map[string]yaml.Node `yaml:"tiers"`
	Models  map[string]yaml.Node `yaml:"models"`
	Default yaml.Node            `yaml:"default"`
}

// queryYAML is one entry of "queries"; it remembers its line.
type queryYAML struct {
	Name   string
	Role   string
	Level  string
	Expr   string
	Stage  string
	Labels map[string]string
	line   int
}

var queryKeys = map[string]bool{"name": true, "role": true, "level": true, "expr": true, "stage": true, "labels": true}

// UnmarshalYAML decodes a query and rejects unknown keys with their line
// (yaml.v3's KnownFields does not reach into custom unmarshalers).
func (q *queryYAML) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a query is a mapping with role, level, expr and labels", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !queryKeys[k.Value] {
			return fmt.Errorf("line %d: unknown query field %q (want name, role, level, expr, stage, labels)", k.Line, k.Value)
		}
	}
	type plain struct {
		Name   string            `yaml:"name"`
		Role   string            `yaml:"role"`
		Level  string            `yaml:"level"`
		Expr   string            `yaml:"expr"`
		Stage  string            `yaml:"stage"`
		Labels map[string]string `yaml:"labels"`
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*q = queryYAML{Name: p.Name, Role: p.Role, Level: p.Level, Expr: p.Expr, Stage: p.Stage, Labels: p.Labels, line: n.Line}
	return nil
}

// durYAML is a Go duration ("15s") with its line.
type durYAML struct {
	d    time.Duration
	line int
}

func (d *durYAML) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: want a duration such as 15s, got %q", n.Line, n.Value)
	}
	d.d, d.line = v, n.Line
	return nil
}

// labelsYAML is one label name or a list of them (the first non-empty
// wins): kube_events.model_label and version_label.
type labelsYAML []string

func (l *labelsYAML) UnmarshalYAML(n *yaml.Node) error {
	var names []string
	switch n.Kind {
	case yaml.ScalarNode:
		names = []string{n.Value}
	case yaml.SequenceNode:
		if err := n.Decode(&names); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("line %d: want a label name or a list of them", n.Line)
	}
	*l = names
	return nil
}

// rateYAML is rate_window: "auto" (0) or a duration.
type rateYAML struct{ d time.Duration }

func (r *rateYAML) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "auto" {
		r.d = 0
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < time.Second || v%time.Second != 0 {
		return fmt.Errorf("line %d: rate_window: want auto or whole seconds ≥ 1s such as 2m, got %q", n.Line, n.Value)
	}
	r.d = v
	return nil
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// levelNeeds lists the scope fields each level's curves must carry.
var levelNeeds = map[correlate.Level][]string{
	correlate.LevelFleet:   nil,
	correlate.LevelModel:   {"model"},
	correlate.LevelVersion: {"model", "version"},
	correlate.LevelReplica: {"replica"},
	correlate.LevelNode:    {"node"},
}

// apply merges f into c. origin names the file (or preset) in errors;
// preset is the preset name for embedded files, "" for the user's file.
func (f *fileYAML) apply(c *Config, origin, preset string, byName map[string]Query) error {
	at := func(line int) string {
		if line > 0 && preset == "" {
			return fmt.Sprintf("%s:%d", origin, line)
		}
		return origin
	}
	for _, set := range []struct {
		src *durYAML
		dst *time.Duration
		key string
	}{{f.Step, &c.Step, "step"}, {f.Lookback, &c.Lookback, "lookback"}, {f.Delay, &c.Delay, "delay"},
		{f.Overlap, &c.Overlap, "overlap"}, {f.MaxChunk, &c.MaxChunk, "max_chunk"}} {
		if set.src != nil {
			*set.dst = set.src.d
		}
	}
	if f.RateWindow != nil {
		c.RateWindow = f.RateWindow.d
	}
	if c.Step < time.Second || c.Step%time.Second != 0 {
		return fmt.Errorf("%s: step: want whole seconds ≥ 1s, got %s", origin, c.Step)
	}
	if c.MaxChunk < c.Step {
		return fmt.Errorf("%s: max_chunk %s is shorter than step %s", origin, c.MaxChunk, c.Step)
	}
	for from, to := range f.ModelAliases {
		if from == "" || to == "" {
			return fmt.Errorf("%s: model_aliases: want name: alias, got %q: %q", origin, from, to)
		}
		if c.ModelAliases == nil {
			c.ModelAliases = map[string]string{}
		}
		c.ModelAliases[from] = to
	}
	if len(f.Match) > 0 {
		if preset != "" {
			return fmt.Errorf("preset %s: match is the user's", preset)
		}
		ms, err := matcherList(f.Match)
		if err != nil {
			return fmt.Errorf("%s: %w", origin, err)
		}
		c.Match, c.matchers = f.Match, ms
	}
	if f.Parallelism != nil {
		if *f.Parallelism < 1 || *f.Parallelism > 64 {
			return fmt.Errorf("%s: parallelism: want 1..64, got %d", origin, *f.Parallelism)
		}
		c.Parallelism = *f.Parallelism
	}
	if k := f.Kube; k != nil {
		c.Kube.Enabled = k.Enabled == nil || *k.Enabled
		if k.ModelLabel != nil {
			c.Kube.ModelLabels = k.ModelLabel
		}
		if k.VersionLabel != nil {
			c.Kube.VersionLabels = k.VersionLabel
		}
		for _, l := range append(slices.Clone(c.Kube.ModelLabels), c.Kube.VersionLabels...) {
			if !labelNameRE.MatchString(l) {
				return fmt.Errorf("%s: kube_events: %q is not a Prometheus label name", origin, l)
			}
		}
		if k.ModelFromDeployment != "" {
			re, err := regexp.Compile(k.ModelFromDeployment)
			if err != nil {
				return fmt.Errorf("%s: kube_events.model_from_deployment: %v", origin, err)
			}
			c.Kube.ModelFromDeployment = re
		}
		if k.MergeWindow != nil {
			c.Kube.MergeWindow = k.MergeWindow.d
		}
	}
	for i, y := range f.Queries {
		q, err := y.query(preset)
		if err != nil {
			return fmt.Errorf("%s: queries[%d]: %w", at(y.line), i, err)
		}
		q.Origin = at(y.line)
		if prev, dup := byName[q.Name]; dup && preset != "" {
			return fmt.Errorf("%s: query %q defined twice (also %s)", q.Origin, q.Name, prev.Origin)
		}
		byName[q.Name] = q // a user query replaces the preset query of the same name
	}
	for _, d := range f.Disable {
		if _, ok := byName[d]; !ok {
			// With presets "auto", a query of a preset that detection did
			// not (or not yet) take is disabled already.
			if p, _, _ := strings.Cut(d, "/"); c.autoFile && slices.Contains(PresetNames(), p) {
				continue
			}
			return fmt.Errorf("%s: disable: no query named %q", origin, d)
		}
		delete(byName, d)
	}
	if f.SLOs != nil {
		if err := f.SLOs.apply(&c.SLOs, origin); err != nil {
			return err
		}
	}
	return nil
}

// query validates one entry: a known role and level, label names that
// Prometheus allows, the scope fields the level needs, and a stage exactly
// for stage_time.
func (y queryYAML) query(preset string) (Query, error) {
	q := Query{Role: correlate.Role(y.Role), Level: correlate.Level(y.Level), Expr: strings.TrimSpace(y.Expr), Stage: y.Stage}
	if !containsRole(knownRoles, q.Role) {
		return q, fmt.Errorf("unknown role %q (known: %s)", y.Role, joinRoles(knownRoles))
	}
	if _, ok := levelNeeds[q.Level]; !ok {
		return q, fmt.Errorf("unknown level %q (known: fleet, model, version, replica, node)", y.Level)
	}
	if q.Expr == "" {
		return q, fmt.Errorf("role %s: expr is empty", y.Role)
	}
	for field, label := range y.Labels {
		if !labelNameRE.MatchString(label) {
			return q, fmt.Errorf("labels.%s: %q is not a Prometheus label name", field, label)
		}
		dst := q.Labels.field(field)
		if dst == nil {
			return q, fmt.Errorf("labels: unknown scope field %q (want model, version, tenant, replica, node, stage)", field)
		}
		*dst = label
	}
	for _, need := range levelNeeds[q.Level] {
		if *q.Labels.field(need) == "" {
			return q, fmt.Errorf("level %s needs labels.%s (which Prometheus label holds the %s)", q.Level, need, need)
		}
	}
	if q.Stage != "" {
		if _, ok := correlate.ParseStage(q.Stage); !ok {
			return q, fmt.Errorf("stage: unknown stage %q (known: %s)", q.Stage, strings.Join(correlate.StageNames(), ", "))
		}
		if q.Labels.Stage != "" {
			return q, fmt.Errorf("give either stage (fixed) or labels.stage, not both")
		}
	}
	isStage := q.Stage != "" || q.Labels.Stage != ""
	if q.Role == correlate.RoleStageTime && !isStage {
		return q, fmt.Errorf("role stage_time needs stage or labels.stage")
	}
	if q.Role != correlate.RoleStageTime && isStage {
		return q, fmt.Errorf("only role stage_time takes a stage, not %s", q.Role)
	}
	q.Name = y.Name
	if q.Name == "" {
		q.Name = string(q.Role) + "@" + string(q.Level)
		if q.Stage != "" {
			q.Name += ":" + q.Stage
		}
		if preset != "" {
			q.Name = preset + "/" + q.Name
		}
	}
	return q, nil
}

// field is the label named for a scope field (or the stage); nil for a
// name that is none of them.
func (m *LabelMap) field(name string) *string {
	switch name {
	case "model":
		return &m.Model
	case "version":
		return &m.Version
	case "tenant":
		return &m.Tenant
	case "replica":
		return &m.Replica
	case "node":
		return &m.Node
	case "stage":
		return &m.Stage
	}
	return nil
}

func containsRole(rs []correlate.Role, r correlate.Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func joinRoles(rs []correlate.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
