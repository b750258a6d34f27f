package pull

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waterline-dev/waterline/correlate"
)

// Config is the effective pull configuration: the queries by role (presets
// composed with the user's file), the kube-state-metrics events, the pull
// timing and the SLOs. Build it with LoadConfig or ParseConfig; the zero
// value is not usable.
type Config struct {
	file        string        // the file it was read from, for errors
	Presets     []string      // presets in effect, includes resolved, in order
	Queries     []Query       // sorted by name
	Step        time.Duration // resolution of pulled curves
	Lookback    time.Duration // how far back a source's first live pull starts
	Delay       time.Duration // the newest Delay of data is not pulled yet (scrapes still arriving)
	Overlap     time.Duration // each live pull re-reads this much before the cursor, to settle edge values
	MaxChunk    time.Duration // longest range per Prometheus query
	RateWindow  time.Duration // rate() window in the presets' queries; 0 (auto): two measured scrape intervals, at least 1m (ratewindow.go)
	Parallelism int           // sources pulled at once
	Kube        KubeEvents
	SLOs        SLOs
	// ModelAliases renames models as pulled (model_aliases): exporter's
	// name → the fleet's.
	ModelAliases map[string]string
	// Match holds the labels every query is restricted to (match:), and
	// matchers their PromQL form ("" for none): see match.go.
	Match    map[string]string
	matchers string
	// auto: the presets include "auto", resolved by DetectPresets from
	// the metric names Prometheus holds; until then the others (or
	// "inference" alone) apply. source and data rebuild the config then.
	auto     bool
	autoFile bool     // the file says "auto": its disable may name presets detection did not take
	autoRest []string // the presets named beside "auto"
	source   string
	data     []byte
}

// Query is one PromQL expression whose series become curves of one role at
// one level. Labels say which Prometheus label holds each scope field.
type Query struct {
	Name   string // unique; "<preset>/<role>@<level>[:<stage>]" for presets
	Role   correlate.Role
	Level  correlate.Level
	Expr   string
	Labels LabelMap
	Stage  string // fixed stage for a query of one stage; else Labels.Stage names the label
	Origin string // "file.yaml:12" or "preset inference", for error messages
}

// LabelMap maps scope fields onto Prometheus label names; empty means the
// query does not carry that field.
type LabelMap struct {
	Model, Version, Tenant, Replica, Node, Stage string
}

// KubeEvents configures the change events derived from kube-state-metrics.
type KubeEvents struct {
	Enabled bool
	// ModelLabels and VersionLabels are the kube_pod_labels labels holding
	// a pod's model and version, the first non-empty of each list winning
	// (label_app, else label_app_kubernetes_io_name; label_version, else
	// label_app_kubernetes_io_version).
	ModelLabels, VersionLabels []string
	// ModelFromDeployment extracts the model from a deployment (or HPA
	// target) name: the first capture group, or the whole match.
	ModelFromDeployment *regexp.Regexp
	// MergeWindow is how close a new version must follow a generation bump
	// (and a spec change an HPA decision) to be the same change.
	MergeWindow time.Duration
}

// EventsSource is the pull source name of the kube-state-metrics events.
const EventsSource = "events/kube-state-metrics"

// knownRoles are the roles the analysis understands (correlate.Role*).
var knownRoles = correlate.Roles

var knownLevels = correlate.Levels

// LoadConfig reads the YAML file at path (WATERLINE_CONFIG); an empty path
// gives the built-in preset "inference". Errors name the file and line.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return ParseConfig("(built-in)", []byte("presets: [auto]\n"))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, b)
}

// ParseConfig builds the effective config from a YAML document; name is
// used in error messages. Without a "presets" key the preset "inference"
// applies; "presets: []" turns presets off; "auto" among them stands for
// the presets whose exporters Prometheus scrapes (DetectPresets; until
// then "inference" when no other preset is named).
func ParseConfig(name string, data []byte) (*Config, error) {
	return parseConfig(name, data, nil)
}

// parseConfig is ParseConfig with "auto" resolved to detected (nil: not
// yet).
func parseConfig(name string, data []byte, detected []string) (*Config, error) {
	var f fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", name, yamlError(err))
	}
	c := &Config{
		Step: 15 * time.Second, Lookback: time.Hour, Delay: 30 * time.Second, Overlap: 2 * time.Minute,
		MaxChunk: 6 * time.Hour, Parallelism: 4,
		Kube: KubeEvents{
			ModelLabels:   []string{"label_app", "label_app_kubernetes_io_name"},
			VersionLabels: []string{"label_version", "label_app_kubernetes_io_version"},
			MergeWindow:   10 * time.Minute,
		},
	}
	presets := []string{"inference"}
	if f.Presets != nil {
		presets = *f.Presets
	}
	if i := slices.Index(presets, "auto"); i >= 0 {
		c.auto, c.autoFile, c.source, c.data = detected == nil, true, name, data
		rest := slices.Delete(slices.Clone(presets), i, i+1)
		c.autoRest = rest
		switch {
		case detected != nil:
			presets = append(rest, detected...)
		case len(rest) == 0:
			presets = []string{"inference"}
		default:
			presets = rest
		}
	}
	byName := map[string]Query{}
	seen := map[string]bool{}
	for _, p := range presets {
		if err := c.addPreset(p, byName, seen, nil); err != nil {
			return nil, fmt.Errorf("%s: presets: %w", name, err)
		}
	}
	if err := f.apply(c, name, "", byName); err != nil {
		return nil, err
	}
	for _, q := range byName {
		if strings.HasPrefix(q.Origin, "preset ") && c.RateWindow != 0 && c.RateWindow != time.Minute {
			q.Expr = strings.ReplaceAll(q.Expr, "[1m]", fmt.Sprintf("[%ds]", int64(c.RateWindow/time.Second)))
		}
		expr, err := withMatchers(q.Expr, c.matchers)
		if err != nil {
			return nil, fmt.Errorf("%s: query %s: match: %v", q.Origin, q.Name, err)
		}
		q.Expr = expr
		c.Queries = append(c.Queries, q)
	}
	sort.Slice(c.Queries, func(i, j int) bool { return c.Queries[i].Name < c.Queries[j].Name })
	c.file = name
	if c.Kube.ModelFromDeployment == nil {
		c.Kube.ModelFromDeployment = regexp.MustCompile(`^(.+)$`)
	}
	return c, nil
}

// CheckPullable says whether there is anything to pull. It is asked when
// pulling starts, not when the file is read: a server that pulls nothing
// (PROMETHEUS_URL unset: OTLP and pushed data only) may say presets: []
// beside its otlp: section.
func (c *Config) CheckPullable() error {
	if len(c.Queries) == 0 && !c.Kube.Enabled {
		return fmt.Errorf("%s: nothing to pull: no presets and no queries", c.file)
	}
	return nil
}

// addPreset adds a preset's queries and settings, its includes first.
func (c *Config) addPreset(name string, byName map[string]Query, seen map[string]bool, stack []string) error {
	if seen[name] {
		return nil
	}
	for _, s := range stack {
		if s == name {
			return fmt.Errorf("preset include cycle %s → %s", strings.Join(stack, " → "), name)
		}
	}
	data, ok := presetYAML(name)
	if !ok {
		return fmt.Errorf("unknown preset %q (built-in: %s)", name, strings.Join(PresetNames(), ", "))
	}
	var f fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("preset %s: %v", name, err) // a bug in the embedded file
	}
	for _, inc := range f.Include {
		if err := c.addPreset(inc, byName, seen, append(stack, name)); err != nil {
			return err
		}
	}
	seen[name] = true
	c.Presets = append(c.Presets, name)
	return f.apply(c, "preset "+name, name, byName)
}

var inTypeRE = regexp.MustCompile(` in type [\w.]+`)

// yamlError renders a yaml.v3 error as "line N: …", without Go type names.
func yamlError(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return inTypeRE.ReplaceAllString(strings.Join(te.Errors, "; "), "")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// scoped restricts a query the puller writes itself (kube-state-metrics
// events, the pod join) to the match: labels. Those are well-formed, so
// an error cannot happen; the query is then sent as it is.
func (c *Config) scoped(expr string) string {
	if out, err := withMatchers(expr, c.matchers); err == nil {
		return out
	}
	return expr
}
