package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waterline-dev/waterline/correlate"
)

// Config says how spans become samples: which span gives the total, which
// spans and attributes give the stages, where the dimensions come from,
// and how long incomplete traces are held. DefaultConfig covers a
// Triton- or vLLM-style server behind a gateway; WATERLINE_CONFIG's
// "otlp:" section changes it (ParseConfig).
type Config struct {
	// ModelAliases renames a model as spans name it onto the fleet's
	// name (WATERLINE_CONFIG's top-level model_aliases, as for pull).
	ModelAliases map[string]string
	// EntrySpan names the span whose duration is the request's total;
	// empty = the trace's root span (or topmost span under a remote
	// parent).
	EntrySpan string
	// Grace is how long a trace whose entry span has arrived waits for
	// late children (spans of other services are exported on their own
	// timers) before it becomes a sample.
	Grace time.Duration
	// MaxWait is how long a trace without its entry span is held before it
	// is given up (or, without an EntrySpan, emitted from its topmost span).
	MaxWait time.Duration
	// MaxSpans bounds the spans held in memory across all traces; past it
	// the oldest traces are finished early (emitted if their entry span
	// is there, else as at MaxWait).
	MaxSpans int
	// MaxSpansPerTrace bounds one trace; spans past it are rejected.
	MaxSpansPerTrace int

	// Rules map spans onto stages, first match wins; a span no rule
	// matches counts toward its parent's stage, the entry span's toward
	// gateway.
	Rules []Rule
	// AttrStages take a stage's time from a span attribute (vLLM's
	// gen_ai.latency.time_in_queue), the first present per stage.
	AttrStages []AttrStage
	// EventStages take a stage's time between two span events (Triton's
	// QUEUE_START → COMPUTE_START), looked for on the span and its children.
	EventStages []EventStage

	// Dims lists, per dimension, the attributes to read, first present
	// wins (for the same attribute, the span's before the resource's; for
	// the version, any of the span's before the resource's).
	Dims map[Dim][]string
}

// Dim is a sample field that comes from attributes.
type Dim string

// The dimensions read from attributes.
const (
	DimModel      Dim = "model"
	DimVersion    Dim = "version"
	DimTenant     Dim = "tenant"
	DimReplica    Dim = "replica"
	DimNode       Dim = "node"
	DimEntry      Dim = "entry"
	DimBatchSize  Dim = "batch_size"
	DimSampleRate Dim = "sample_rate"
	DimDependency Dim = "dependency"
	DimStatusCode Dim = "status_code"
	// DimService names the model when no span does (model_fallback in
	// the YAML): vLLM's V1 engine sets no model attribute on its spans
	// (vllm-project/vllm#47633), so a vLLM behind a gateway that names
	// none either is known only by its process' service.name.
	DimService Dim = "model_fallback"
	// DimInputTokens and DimOutputTokens are an LLM request's prompt and
	// generated tokens: counts, read as numbers (tokenDims), not labels.
	DimInputTokens  Dim = "input_tokens"
	DimOutputTokens Dim = "output_tokens"
)

// tokenDims are the dimensions that are token counts, in Sample order
// (input, output): numbers per request, which the mapper keeps out of its
// shared label sets.
var tokenDims = [2]Dim{DimInputTokens, DimOutputTokens}

// dims lists every Dim, in the order of the YAML's documentation.
var dims = []Dim{DimModel, DimVersion, DimTenant, DimReplica, DimNode, DimEntry, DimBatchSize, DimSampleRate,
	DimDependency, DimStatusCode, DimService}

// serverDims are read from the model server's spans first (those timing
// queue, batch_wait, exec or postprocess), because the gateway in front
// runs in another pod and may name the model too; the rest (entry,
// tenant, status) from the entry span first, where the request came in.
var serverDims = map[Dim]bool{DimModel: true, DimVersion: true, DimReplica: true, DimNode: true, DimBatchSize: true}

// Rule maps matching spans onto a stage. Every set condition must hold.
type Rule struct {
	Stage correlate.Stage
	Name  *regexp.Regexp // span name (unanchored; use ^…$ for exact)
	Kind  string         // server, client, internal, producer, consumer; "" = any
	// Except: span names the rule does not take, though Name matches them
	// (Go's regular expressions have no negative lookahead).
	Except *regexp.Regexp
	Attrs  map[string]*regexp.Regexp // attribute (span, then resource) present and matching
	// Leaf: the span has no children in the trace — a call whose callee is
	// not traced (a dependency), as opposed to a hop to a traced service.
	Leaf bool
}

// AttrStage reads a stage's duration from a span attribute.
type AttrStage struct {
	Stage correlate.Stage
	Attr  string
	Scale float64 // to ms: 1000 for seconds, 1 for ms, 1e-6 for ns
}

// EventStage times a stage between two span events.
type EventStage struct {
	Stage    correlate.Stage
	From, To string
}

// DefaultConfig is the built-in mapping (README "OpenTelemetry traces").
func DefaultConfig() Config {
	// Span-name rules match at the start of the name, after at most one
	// word and a separator ("vllm.execute_model", "triton compute"), so an
	// HTTP server span named "POST /v1/generate" is not taken for model
	// execution; and they end where a word ends ("infer…" takes
	// "inference." and "InferRequest"), a hyphen continuing it, so a
	// handler or a topic named "inference-gateway" is not either.
	name := func(alt string) *regexp.Regexp {
		return regexp.MustCompile(`(?i)^([\w-]+[ ./:])?(` + alt + `)[a-z]*($|[^a-z0-9-])`)
	}
	present := regexp.MustCompile(``)
	return Config{
		Grace:            5 * time.Second,
		MaxWait:          time.Minute,
		MaxSpans:         200_000,
		MaxSpansPerTrace: 1000,
		Rules: []Rule{
			// A call out of the request to something untraced: a vector
			// database, a feature store, another API.
			{Stage: correlate.StageDownstream, Kind: "client", Leaf: true, Attrs: map[string]*regexp.Regexp{"peer.service": present}},
			{Stage: correlate.StageDownstream, Kind: "client", Leaf: true, Attrs: map[string]*regexp.Regexp{"db.system": present}},
			{Stage: correlate.StageDownstream, Kind: "client", Leaf: true, Attrs: map[string]*regexp.Regexp{"db.system.name": present}},
			{Stage: correlate.StageDownstream, Kind: "client", Leaf: true, Attrs: map[string]*regexp.Regexp{"server.address": present}},
			{Stage: correlate.StageAuth, Name: name(`auth[nz]?\b|authenticat|authoriz|ext_authz|api.?key|jwt`)},
			// Gateways' own authentication spans: Kong's plugin spans
			// ("kong.access.plugin.key-auth") and Envoy's gRPC ext_authz call
			// ("async envoy.service.auth.v3.Authorization.Check egress").
			{Stage: correlate.StageAuth, Name: regexp.MustCompile(`(?i)^kong\.(access|rewrite)\.plugin\.([a-z0-9-]*auth[a-z0-9-]*|jwt[a-z0-9-]*|oauth2[a-z0-9-]*|openid-connect|acl|opa)$|envoy\.service\.auth\.v[0-9]+\.Authorization\.Check\b`)},
			{Stage: correlate.StageRoute, Name: name(`rout(e|er|ing)\b|load.?balanc|pick.?endpoint|endpoint.?picker|select.?(backend|upstream)`)},
			{Stage: correlate.StageBatchWait, Name: name(`batch.?(wait|form|queue)|dynamic.?batch`)},
			// Knative's queue-proxy wraps the whole request in "queue_proxy"
			// (its wait is "queue_wait").
			{Stage: correlate.StageQueue, Name: name(`queue|schedul|enqueue|wait.?(for|in).?queue`), Except: regexp.MustCompile(`(?i)^queue.?proxy`)},
			{Stage: correlate.StagePostprocess, Name: name(`post.?process|detokeni[sz]|compute_output|serializ|respon(se|d).?(format|encod)`)},
			// Triton's "compute" span, vLLM's request span and model
			// execution spans in general — not Triton's root "InferRequest",
			// whose own time is its HTTP/gRPC frontend receiving the request
			// and sending the answer (src/tracer.cc): the entry's own time,
			// gateway, as any server's front.
			{Stage: correlate.StageExec, Name: name(`compute$|infer|llm_request|execute.?model|model.?(exec|forward)|forward|generat|prefill|decode`),
				Except: regexp.MustCompile(`(?i)^InferRequest$`)},
		},
		AttrStages: []AttrStage{
			// vLLM's request span (seconds).
			{Stage: correlate.StageQueue, Attr: "gen_ai.latency.time_in_queue", Scale: 1000},
			{Stage: correlate.StageExec, Attr: "gen_ai.latency.time_in_model_inference", Scale: 1000},
			{Stage: correlate.StageExec, Attr: "gen_ai.latency.time_in_model_execute", Scale: 1000},
		},
		EventStages: []EventStage{
			// Triton's request span and its "compute" child.
			{Stage: correlate.StageQueue, From: "QUEUE_START", To: "COMPUTE_START"},
			{Stage: correlate.StagePostprocess, From: "COMPUTE_OUTPUT_START", To: "COMPUTE_END"},
		},
		// The version: the model's own before the process's (service.version
		// is often the server's image tag).
		Dims: map[Dim][]string{
			DimModel:      {"gen_ai.request.model", "model", "triton.model_name", "gen_ai.response.model"},
			DimVersion:    {"model.version", "triton.model_version", "service.version"},
			DimTenant:     {"tenant", "tenant.id"},
			DimReplica:    {"k8s.pod.name", "service.instance.id"},
			DimNode:       {"k8s.node.name", "host.name"},
			DimEntry:      {"http.route", "url.path", "http.target", "http.url", "url.full", "rpc.method"},
			DimBatchSize:  {"batch_size", "batch.size", "inference.batch_size", "triton.batch_size"},
			DimSampleRate: {"sample_rate", "SampleRate", "sampling.rate"},
			DimDependency: {"peer.service", "server.address", "db.system.name", "db.system"},
			// A gRPC call's own status before its HTTP/2 answer's, which is
			// 200 whatever the call's end (Envoy tags both).
			DimStatusCode: {"rpc.grpc.status_code", "grpc.status_code", "http.response.status_code", "http.status_code"},
			DimService:    {"service.name"},
			// OTel's GenAI conventions, then their names before 1.27
			// (vLLM's spans) and OpenLLMetry's.
			DimInputTokens:  {"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"},
			DimOutputTokens: {"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens"},
		},
	}
}

// LoadConfig reads the "otlp:" section of WATERLINE_CONFIG; an empty path
// gives DefaultConfig.
func LoadConfig(path string) (Config, error) {
	if path == "" {
		return DefaultConfig(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, b)
}

// fileYAML is the part of WATERLINE_CONFIG this package reads; the rest
// of the file belongs to pull.
//
//	otlp:
//	  entry_span: gateway.request   # default: the root span
//	  grace: 5s                     # wait for late children after the entry span
//	  max_wait: 1m                  # hold a trace without its entry span this long
//	  max_spans: 200000             # spans held in memory, all traces
//	  max_spans_per_trace: 1000
//	  tenant_attribute: enduser.id  # shorthand for dimensions.tenant: [enduser.id]
//	  dimensions: {model: [llm.model], replica: [k8s.pod.name]}   # replaces a dimension's list
//	  default_rules: true           # false: only the rules below
//	  stages:                       # tried before the built-in rules, first match wins
//	    - {stage: auth, name: '^authz$'}
//	    - {stage: downstream, kind: client, leaf: true, attributes: {peer.service: ''}}
//	  stage_attributes:
//	    - {stage: queue, attribute: queue.time_ms, unit: ms}
//	  stage_events:
//	    - {stage: queue, from: enqueued, to: dequeued}
type fileYAML struct {
	OTLP *sectionYAML `yaml:"otlp"`
}

type sectionYAML struct {
	EntrySpan        *string             `yaml:"entry_span"`
	Grace            *string             `yaml:"grace"`
	MaxWait          *string             `yaml:"max_wait"`
	MaxSpans         *int                `yaml:"max_spans"`
	MaxSpansPerTrace *int                `yaml:"max_spans_per_trace"`
	TenantAttribute  *string             `yaml:"tenant_attribute"`
	Dimensions       map[string][]string `yaml:"dimensions"`
	DefaultRules     *bool               `yaml:"default_rules"`
	Stages           []ruleYAML          `yaml:"stages"`
	StageAttributes  []attrStageYAML     `yaml:"stage_attributes"`
	StageEvents      []eventStageYAML    `yaml:"stage_events"`
}

type ruleYAML struct {
	Stage      string            `yaml:"stage"`
	Name       string            `yaml:"name"`
	Kind       string            `yaml:"kind"`
	Attributes map[string]string `yaml:"attributes"`
	Leaf       bool              `yaml:"leaf"`
}

type attrStageYAML struct {
	Stage     string `yaml:"stage"`
	Attribute string `yaml:"attribute"`
	Unit      string `yaml:"unit"`
}

type eventStageYAML struct {
	Stage string `yaml:"stage"`
	From  string `yaml:"from"`
	To    string `yaml:"to"`
}

var kinds = map[string]bool{"": true, "server": true, "client": true, "internal": true, "producer": true, "consumer": true}

var units = map[string]float64{"s": 1000, "ms": 1, "us": 1e-3, "ns": 1e-6}

// ParseConfig reads the "otlp:" section of a WATERLINE_CONFIG document
// (name is for errors) over DefaultConfig. Unknown keys and bad values
// are errors naming the line.
func ParseConfig(name string, data []byte) (Config, error) {
	c := DefaultConfig()
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	// model_aliases (top level, shared with pull) renames models as
	// spans name them (vLLM's served name) onto the fleet's names.
	if al := section(&root, "model_aliases"); al != nil {
		if err := al.Decode(&c.ModelAliases); err != nil {
			return c, fmt.Errorf("%s:%d: model_aliases: want name: alias pairs", name, al.Line)
		}
	}
	sec := section(&root, "otlp")
	if sec == nil {
		return c, nil
	}
	var s sectionYAML
	// Decode the section strictly: a typo in a key fails at start.
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(sec); err != nil {
		return c, fmt.Errorf("%s: otlp: %v", name, err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		// Lines in the re-encoded section are offset from the file's.
		msg := lineRE.ReplaceAllStringFunc(strings.TrimPrefix(err.Error(), "yaml: "), func(m string) string {
			var n int
			fmt.Sscanf(m, "line %d", &n)
			return fmt.Sprintf("line %d", n+sec.Line-1)
		})
		return c, fmt.Errorf("%s: otlp: %s", name, inTypeRE.ReplaceAllString(msg, ""))
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s:%d: otlp.%s: %s", name, sec.Line, field, fmt.Sprintf(format, args...))
	}
	if s.EntrySpan != nil {
		c.EntrySpan = *s.EntrySpan
	}
	for _, d := range []struct {
		v     *string
		field string
		dst   *time.Duration
	}{{s.Grace, "grace", &c.Grace}, {s.MaxWait, "max_wait", &c.MaxWait}} {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil || v < 0 {
			return c, bad(d.field, "want a duration such as 5s, got %q", *d.v)
		}
		*d.dst = v
	}
	if c.MaxWait < c.Grace {
		return c, bad("max_wait", "must be at least grace (%s)", c.Grace)
	}
	if s.MaxSpans != nil {
		if *s.MaxSpans < 1000 {
			return c, bad("max_spans", "want at least 1000, got %d", *s.MaxSpans)
		}
		c.MaxSpans = *s.MaxSpans
	}
	if s.MaxSpansPerTrace != nil {
		if *s.MaxSpansPerTrace < 1 || *s.MaxSpansPerTrace > c.MaxSpans {
			return c, bad("max_spans_per_trace", "want 1 to max_spans (%d), got %d", c.MaxSpans, *s.MaxSpansPerTrace)
		}
		c.MaxSpansPerTrace = *s.MaxSpansPerTrace
	}
	for k, attrs := range s.Dimensions {
		d := Dim(k)
		if _, ok := c.Dims[d]; !ok {
			known := make([]string, 0, len(dims)+len(tokenDims))
			for _, d := range append(dims[:len(dims):len(dims)], tokenDims[:]...) {
				known = append(known, string(d))
			}
			return c, bad("dimensions."+k, "unknown dimension; known: %s", strings.Join(known, ", "))
		}
		c.Dims[d] = attrs
	}
	if s.TenantAttribute != nil {
		c.Dims[DimTenant] = []string{*s.TenantAttribute}
	}
	stage := func(field, v string) (correlate.Stage, error) {
		st, ok := correlate.ParseStage(v)
		if !ok {
			return 0, bad(field, "unknown stage %q; known stages: %s", v, strings.Join(correlate.StageNames(), ", "))
		}
		return st, nil
	}
	var rules []Rule
	for i, r := range s.Stages {
		field := fmt.Sprintf("stages[%d]", i)
		st, err := stage(field+".stage", r.Stage)
		if err != nil {
			return c, err
		}
		rule := Rule{Stage: st, Kind: strings.ToLower(r.Kind), Leaf: r.Leaf}
		if !kinds[rule.Kind] {
			return c, bad(field+".kind", "want server, client, internal, producer or consumer, got %q", r.Kind)
		}
		if r.Name != "" {
			if rule.Name, err = regexp.Compile(r.Name); err != nil {
				return c, bad(field+".name", "bad regular expression: %v", err)
			}
		}
		for k, v := range r.Attributes {
			re, err := regexp.Compile(v)
			if err != nil {
				return c, bad(field+".attributes."+k, "bad regular expression: %v", err)
			}
			if rule.Attrs == nil {
				rule.Attrs = map[string]*regexp.Regexp{}
			}
			rule.Attrs[k] = re
		}
		if rule.Name == nil && rule.Kind == "" && rule.Attrs == nil && !rule.Leaf {
			return c, bad(field, "matches every span: give a name, kind, attributes or leaf")
		}
		rules = append(rules, rule)
	}
	var attrStages []AttrStage
	for i, a := range s.StageAttributes {
		field := fmt.Sprintf("stage_attributes[%d]", i)
		st, err := stage(field+".stage", a.Stage)
		if err != nil {
			return c, err
		}
		scale, ok := units[a.Unit]
		if !ok {
			return c, bad(field+".unit", "want s, ms, us or ns, got %q", a.Unit)
		}
		if a.Attribute == "" {
			return c, bad(field+".attribute", "required")
		}
		attrStages = append(attrStages, AttrStage{Stage: st, Attr: a.Attribute, Scale: scale})
	}
	var eventStages []EventStage
	for i, e := range s.StageEvents {
		field := fmt.Sprintf("stage_events[%d]", i)
		st, err := stage(field+".stage", e.Stage)
		if err != nil {
			return c, err
		}
		if e.From == "" || e.To == "" {
			return c, bad(field, "from and to are both required")
		}
		eventStages = append(eventStages, EventStage{Stage: st, From: e.From, To: e.To})
	}
	if s.DefaultRules != nil && !*s.DefaultRules {
		c.Rules, c.AttrStages, c.EventStages = nil, nil, nil
	}
	c.Rules = append(rules, c.Rules...)
	c.AttrStages = append(attrStages, c.AttrStages...)
	c.EventStages = append(eventStages, c.EventStages...)
	return c, nil
}

var (
	lineRE   = regexp.MustCompile(`line \d+`)
	inTypeRE = regexp.MustCompile(` in type [\w.]+`)
)

// section returns the value of a top-level key of a YAML document.
func section(root *yaml.Node, key string) *yaml.Node {
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			return root.Content[i+1]
		}
	}
	return nil
}
