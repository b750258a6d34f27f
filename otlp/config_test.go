package otlp

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/waterline-dev/waterline/correlate"
)

func TestParseConfigReadsTheOTLPSectionOnly(t *testing.T) {
	c, err := ParseConfig("w.yaml", []byte(`
presets: [inference]   # pull's, not ours
otlp:
  entry_span: gateway.request
  grace: 2s
  tenant_attribute: enduser.id
  dimensions: {replica: [pod]}
  stages:
    - {stage: queue, name: '^wait$', kind: internal}
  stage_attributes:
    - {stage: batch_wait, attribute: batch.wait_ms, unit: ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.EntrySpan != "gateway.request" || c.Grace != 2*time.Second || c.MaxWait != time.Minute {
		t.Errorf("entry/grace/wait: %q %s %s", c.EntrySpan, c.Grace, c.MaxWait)
	}
	if got := c.Dims[DimTenant]; len(got) != 1 || got[0] != "enduser.id" {
		t.Errorf("tenant: %v", got)
	}
	if got := c.Dims[DimReplica]; len(got) != 1 || got[0] != "pod" {
		t.Errorf("replica: %v", got)
	}
	if c.Rules[0].Stage != correlate.StageQueue || len(c.Rules) != len(DefaultConfig().Rules)+1 {
		t.Errorf("own rules go first, before the built-in ones: %+v", c.Rules[0])
	}
	if c.AttrStages[0].Attr != "batch.wait_ms" || c.AttrStages[0].Scale != 1 {
		t.Errorf("stage attributes: %+v", c.AttrStages[0])
	}
	if c, err := ParseConfig("x", []byte("presets: []\n")); err != nil || c.Grace != DefaultConfig().Grace {
		t.Errorf("a file without otlp: keeps the defaults: %v", err)
	}
}

func TestParseConfigNamesTheBadField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"otlp:\n  gracee: 2s\n", "field gracee not found"},
		{"otlp:\n  grace: soon\n", "otlp.grace: want a duration"},
		{"otlp:\n  stages:\n    - {stage: compute, name: x}\n", `otlp.stages[0].stage: unknown stage "compute"`},
		{"otlp:\n  stages:\n    - {stage: exec, name: '('}\n", "otlp.stages[0].name: bad regular expression"},
		{"otlp:\n  stages:\n    - {stage: exec}\n", "otlp.stages[0]: matches every span"},
		{"otlp:\n  dimensions: {team: [x]}\n", "otlp.dimensions.team: unknown dimension"},
		{"otlp:\n  stage_attributes:\n    - {stage: queue, attribute: q, unit: min}\n", "unit: want s, ms, us or ns"},
	} {
		_, err := ParseConfig("w.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "w.yaml") {
			t.Errorf("%q: got %v, want …%s…", tc.yaml, err, tc.want)
		}
	}
}

// The rules' verdict is cached per span name, kind and the values of the
// attributes rules look at: spans alike in those share it, spans that
// differ in any of them do not, and a full cache starts over.
func TestRuleVerdictsAreCachedByWhatTheRulesRead(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Rules = []Rule{
		{Stage: correlate.StageDownstream, Kind: "client", Attrs: map[string]*regexp.Regexp{"peer.service": regexp.MustCompile(`^vec`)}},
		{Stage: correlate.StageAuth, Attrs: map[string]*regexp.Regexp{"auth.step": regexp.MustCompile(`^1$`)}},
		{Stage: correlate.StageExec, Name: regexp.MustCompile(`^infer`), Leaf: true},
	}
	m := newMapper(cfg)
	str := func(v string) any { return v }
	num := func(v int64) any { return v }
	attr := func(kv ...any) attrList { return attrsOf(t, kv...) }
	none := attrs{span: attr(), res: attr()}
	for round := 0; round < 2; round++ { // the second round answers from the cache
		for _, c := range []struct {
			name, kind  string
			span, res   attrList
			leaf, inner int8
		}{
			{"call", "client", attr("peer.service", str("vector-db")), attr(), int8(correlate.StageDownstream), int8(correlate.StageDownstream)},
			{"call", "client", attr("peer.service", str("other")), attr(), -1, -1},
			{"call", "server", attr("peer.service", str("vector-db")), attr(), -1, -1},
			{"call", "client", attr(), attr("peer.service", str("vector-db")), int8(correlate.StageDownstream), int8(correlate.StageDownstream)},
			{"call", "client", attr(), attr(), -1, -1},
			{"call", "", attr("auth.step", num(1)), attr(), int8(correlate.StageAuth), int8(correlate.StageAuth)},
			{"call", "", attr("auth.step", str("1")), attr(), int8(correlate.StageAuth), int8(correlate.StageAuth)},
			{"call", "", attr("auth.step", num(2)), attr(), -1, -1},
			{"infer", "", attr(), attr(), int8(correlate.StageExec), -1},
			{"infer", "", attr("auth.step", num(1)), attr(), int8(correlate.StageAuth), int8(correlate.StageAuth)},
		} {
			leaf, inner := m.stages(c.name, c.kind, attrs{span: c.span, res: c.res})
			if leaf != c.leaf || inner != c.inner {
				t.Errorf("round %d: %q %q %v %v: got %d/%d, want %d/%d", round, c.name, c.kind, c.span, c.res, leaf, inner, c.leaf, c.inner)
			}
		}
	}
	before := len(m.ruleCache)
	if leaf, _ := m.stages("infer"+strings.Repeat("x", 2*maxRuleKey), "", none); leaf != int8(correlate.StageExec) || len(m.ruleCache) != before {
		t.Errorf("a huge span name: leaf %d, cache %d → %d (not kept)", leaf, before, len(m.ruleCache))
	}
	for i := 0; i < 3*maxRuleCache; i++ {
		name := "call-" + strconv.Itoa(i)
		if i%2 == 1 {
			name = "infer-" + strconv.Itoa(i)
		}
		leaf, _ := m.stages(name, "", none)
		if want := map[bool]int8{false: -1, true: int8(correlate.StageExec)}[i%2 == 1]; leaf != want {
			t.Fatalf("%s: got %d, want %d", name, leaf, want)
		}
		if len(m.ruleCache) > maxRuleCache {
			t.Fatalf("cache holds %d verdicts, bound %d", len(m.ruleCache), maxRuleCache)
		}
	}
}

// A dimension takes its first listed attribute present on the span or its
// resource; for the same attribute, the span's value.
func TestDimensionsPreferTheFirstListedKeyThenTheSpan(t *testing.T) {
	m := newMapper(DefaultConfig())
	resAttrs := []any{"gen_ai.request.model", "from-resource", "k8s.pod.name", "pod-res", "host.name", "host-res"}
	spanAttrs := []any{"model", "from-span", "k8s.pod.name", "pod-span", "k8s.node.name", "", "host.name", "host-span"}
	resolve := func() span {
		d, sp, res := oneSpan(t, pbAttrs(resAttrs...), &tracepb.Span{Name: "x", SpanId: id8(0x0102030405060708), Attributes: pbAttrs(spanAttrs...)})
		var dst span
		m.resolve(&dst, sp, d, m.resource(res))
		return dst
	}
	dst := resolve()
	for d, want := range map[Dim]string{DimModel: "from-resource", DimReplica: "pod-span", DimNode: "host-span"} {
		if got := dst.dims[dimIndex[d]]; got != want {
			t.Errorf("%s: got %q, want %q", d, got, want)
		}
	}
	// The version is the span's, whichever key names it: the resource's
	// names the process (an image tag), the span's the model.
	resAttrs = append(resAttrs, "model.version", "7", "service.version", "24.05-py3")
	spanAttrs = append(spanAttrs, "triton.model_version", 3)
	if got := resolve().dims[dimVersion]; got != "3" {
		t.Errorf("version: got %q, want the span's 3", got)
	}
	spanAttrs = spanAttrs[:len(spanAttrs)-2]
	if got := resolve().dims[dimVersion]; got != "7" {
		t.Errorf("version from the resource: got %q, want model.version 7 before service.version", got)
	}
}

// A span's attributes are read once (readAttrs): the keys read by name
// then give what a lookup on the span, then its resource, gives.
func TestSlotKeysReadAsLookedUp(t *testing.T) {
	m := newMapper(DefaultConfig())
	resAttrs := pbAttrs("peer.service", "from-resource", "error.type", "Timeout", "gen_ai.latency.time_in_queue", 0.5)
	for _, own := range [][]any{
		nil,
		{"peer.service", "from-span", "db.system", 3},
		{"error.type", "cancelled", "gen_ai.latency.time_in_model_inference", 0.1},
	} {
		d, sp, resList := oneSpan(t, resAttrs, &tracepb.Span{Name: "call", Kind: client, Attributes: pbAttrs(own...)})
		res := m.resource(resList)
		spAttrs := d.attrs(sp.attrs)
		var dims [numDims]string
		var prio [numDims]int
		m.readAttrs(spAttrs, &dims, &prio, &m.spanVals)
		read := attrs{span: spAttrs, res: res.attrs, sv: &m.spanVals, rv: &res.slots}
		looked := attrs{span: spAttrs, res: res.attrs}
		for i, k := range m.slotKeys {
			v1, ok1 := read.slot(i, k)
			v2, ok2 := looked.slot(i, k)
			if ok1 != ok2 || (ok1 && text(v1) != text(v2)) {
				t.Errorf("%v: %s read %v %q, looked up %v %q", own, k, ok1, text(v1), ok2, text(v2))
			}
		}
	}
	d, sp, resList := oneSpan(t, resAttrs, &tracepb.Span{Name: "call", Kind: client, SpanId: id8(0x0100000000000000)})
	var dst span
	m.resolve(&dst, sp, d, m.resource(resList))
	if dst.stageLeaf != int8(correlate.StageDownstream) || !dst.timedOut || len(dst.extra) != 1 || dst.extra[0].ms != 500 {
		t.Errorf("from the resource: leaf stage %d, timed out %v, stage times %v", dst.stageLeaf, dst.timedOut, dst.extra)
	}
}

// The built-in span-name rules take the operation names of model servers
// and gateways (README's table) and end where a word ends: a hyphen
// continues it, so a handler or topic named inference-… is not model
// execution, and Knative's queue_proxy wrapper (around the whole
// request) is not a queue.
func TestDefaultNameRulesMatchWholeWords(t *testing.T) {
	m := newMapper(DefaultConfig())
	none := correlate.Stage(-1)
	for name, want := range map[string]correlate.Stage{
		"authenticate": correlate.StageAuth, "auth": correlate.StageAuth, "authz": correlate.StageAuth,
		"gateway.authorize": correlate.StageAuth, "ext_authz": correlate.StageAuth, "jwt": correlate.StageAuth,
		"check api_key": correlate.StageAuth, "validate apikey": correlate.StageAuth, "author": none,
		"route": correlate.StageRoute, "route request": correlate.StageRoute, "router": correlate.StageRoute,
		"routing": correlate.StageRoute, "load balance": correlate.StageRoute, "pick endpoint": correlate.StageRoute,
		"select backend": correlate.StageRoute, "endpoint_picker": correlate.StageRoute, "routes-api": none,
		"batch wait": correlate.StageBatchWait, "batch_form": correlate.StageBatchWait, "dynamic batching": correlate.StageBatchWait,
		"queue": correlate.StageQueue, "queue wait": correlate.StageQueue, "ratelimit queue": correlate.StageQueue,
		"queue_wait": correlate.StageQueue, "schedule": correlate.StageQueue, "vllm.scheduler": correlate.StageQueue,
		"enqueue": correlate.StageQueue, "wait_for_queue": correlate.StageQueue, "queued": correlate.StageQueue,
		"queue_proxy": none, "queue-proxy": none, "queue-consumer process": none,
		"postprocess": correlate.StagePostprocess, "post_process": correlate.StagePostprocess,
		"detokenize": correlate.StagePostprocess, "compute_output": correlate.StagePostprocess,
		"serialize": correlate.StagePostprocess, "response format": correlate.StagePostprocess,
		"compute": correlate.StageExec, "triton compute": correlate.StageExec, "computer": none,
		"infer": correlate.StageExec, "infer chat-7b": correlate.StageExec, "InferRequest": none,
		"inference": correlate.StageExec, "inference.GRPCInferenceService/ModelInfer": correlate.StageExec,
		"llm_request": correlate.StageExec, "vllm.execute_model": correlate.StageExec, "model forward": correlate.StageExec,
		"forward": correlate.StageExec, "generate": correlate.StageExec, "generate_stream": correlate.StageExec,
		"generation": correlate.StageExec, "prefill": correlate.StageExec, "decode": correlate.StageExec,
		"inference-gateway": none, "inference-requests publish": none, "send inference-requests": none,
		"handle decode-7b": none, "POST /v1/generate": none, "GET /infer": none,
	} {
		leaf, _ := m.stages(name, "internal", attrs{})
		if correlate.Stage(leaf) != want {
			t.Errorf("%q: stage %d, want %d", name, leaf, want)
		}
	}
}
