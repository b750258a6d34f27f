package otlp

// Traces as real servers and gateways export them today (attribute names,
// types, span names, kinds and flags taken from their sources), and what
// the built-in defaults make of them.

import (
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Span flags as the OpenTelemetry SDKs that set them write them: bit 8
// says bit 9 is known, bit 9 that the parent is remote (Python's OTLP
// encoder: span_flags(parent)).
const (
	flagsParentLocal  = 0x100
	flagsParentRemote = 0x300
)

// vllmV1Span is vLLM's V1 request span as OutputProcessor.do_tracing
// (vllm/v1/engine/output_processor.py) builds it: "llm_request", kind
// SERVER, under the context extracted from the request's traceparent,
// started at the request's arrival; latencies in seconds; no model
// attribute (its own tests/v1/tracing/test_tracing.py has the
// gen_ai.response.model assertion commented out, and vllm-project/vllm
// PR #47633 says gen_ai.request.model is never set).
func vllmV1Span(id, parent uint64, from, to float64) tspan {
	return tspan{id: id, parent: parent, name: "llm_request", kind: server, from: from, to: to, flags: flagsParentRemote,
		attrs: map[string]any{
			"gen_ai.latency.time_to_first_token":     0.2,
			"gen_ai.latency.e2e":                     (to - from) / 1000,
			"gen_ai.latency.time_in_queue":           0.05,
			"gen_ai.usage.prompt_tokens":             42,
			"gen_ai.usage.completion_tokens":         128,
			"gen_ai.latency.time_in_model_prefill":   0.15,
			"gen_ai.latency.time_in_model_decode":    0.35,
			"gen_ai.latency.time_in_model_inference": 0.5,
			"gen_ai.request.id":                      "chatcmpl-1f2e",
			"gen_ai.request.max_tokens":              128,
			"gen_ai.request.top_p":                   0.9,
		}}
}

// The Python SDK's default resource, as vLLM's init_tracer creates it
// (TracerProvider() with OTEL_SERVICE_NAME set, as vLLM's docs do).
var vllmResource = map[string]any{"service.name": "vllm-server", "telemetry.sdk.language": "python",
	"telemetry.sdk.name": "opentelemetry", "telemetry.sdk.version": "1.33.1"}

// vLLM V1 on its own (no gateway exporting to Waterline): its one span
// names no model, and every trace was dropped as no_model — the defaults
// did not cover vLLM's own instrumentation at all. The model server's
// service.name now names the model when no span does.
func TestRealVLLMV1TraceIsNotDropped(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	s := vllmV1Span(1, 0, 0, 700)
	s.flags = flagsParentLocal // a root: no traceparent came in
	mustAdd(t, a, request(traceID(1), start, vllmResource, s))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("vLLM V1's llm_request trace: %d samples, want 1 (dropped as no_model: %d)",
			len(sk.got), a.Stats().Dropped[DropNoModel].Load())
	}
	if got := sk.got[0]; got.Model != "vllm-server" || !near(got.StagesMs[correlate.StageExec], 650) {
		t.Errorf("model %q exec %v, want vllm-server (its service.name) and 650", got.Model, got.StagesMs[correlate.StageExec])
	}
}

// The service.name fallback is the model server's only, and only when no
// span names the model: a model named by the gateway wins; a trace with
// no model server (a gateway's health check) and an SDK's default
// "unknown_service…" name none.
func TestModelFallbackIsTheModelServersServiceName(t *testing.T) {
	t.Run("the gateway names the model", func(t *testing.T) {
		a, ck, sk := newTest(t, DefaultConfig())
		start := ck.now().Add(-time.Minute)
		gw := envoyIngress(1, 0, 0, 720, "200")
		gw.attrs["gen_ai.request.model"] = "llama-3-8b"
		mustAdd(t, a, request(traceID(1), start, map[string]any{"service.name": "front-envoy"}, gw))
		mustAdd(t, a, request(traceID(1), start, vllmResource, vllmV1Span(2, 1, 10, 710)))
		ck.add(10 * time.Second)
		flush(t, a)
		if len(sk.got) != 1 || sk.got[0].Model != "llama-3-8b" {
			t.Fatalf("samples %+v, want one of model llama-3-8b", sk.got)
		}
	})
	t.Run("no model server", func(t *testing.T) {
		a, ck, sk := newTest(t, DefaultConfig())
		start := ck.now().Add(-time.Minute)
		mustAdd(t, a, request(traceID(2), start, map[string]any{"service.name": "front-envoy"}, envoyIngress(1, 0, 0, 3, "200")))
		ck.add(10 * time.Second)
		flush(t, a)
		if len(sk.got) != 0 || a.Stats().Dropped[DropNoModel].Load() != 1 {
			t.Fatalf("a gateway-only trace: samples %+v, want none (no_model)", sk.got)
		}
	})
	t.Run("an SDK's default name", func(t *testing.T) {
		a, ck, sk := newTest(t, DefaultConfig())
		start := ck.now().Add(-time.Minute)
		s := vllmV1Span(1, 0, 0, 700)
		s.flags = flagsParentLocal
		mustAdd(t, a, request(traceID(3), start, map[string]any{"service.name": "unknown_service:python3"}, s))
		ck.add(10 * time.Second)
		flush(t, a)
		if len(sk.got) != 0 {
			t.Fatalf("model %q from an SDK's default service.name, want none", sk.got[0].Model)
		}
	})
}

// The workaround that works today: name the model on vLLM's resource
// (OTEL_RESOURCE_ATTRIBUTES=model=<served name>). Queue and exec come from
// the span's attributes, in seconds.
func TestVLLMV1WithModelOnItsResource(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	res := map[string]any{"service.name": "vllm-server", "model": "llama-3-8b", "k8s.pod.name": "vllm-0"}
	s := vllmV1Span(1, 0, 0, 700)
	s.flags = flagsParentLocal
	mustAdd(t, a, request(traceID(1), start, res, s))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	got := sk.got[0]
	if got.Model != "llama-3-8b" || got.Replica != "vllm-0" || !near(got.StagesMs[correlate.StageQueue], 50) ||
		!near(got.StagesMs[correlate.StageExec], 650) {
		t.Errorf("model %q replica %q queue %v exec %v; want llama-3-8b vllm-0 50 650", got.Model, got.Replica,
			got.StagesMs[correlate.StageQueue], got.StagesMs[correlate.StageExec])
	}
}

// envoyIngress is Envoy's downstream span as its OpenTelemetry tracer
// exports it: named "ingress" (TracerUtility::toString), kind SERVER,
// every tag a string — http.url built by Http::Utility::buildOriginalUri
// (scheme://authority/path?query), http.status_code "200"; no
// http.route, no span flags (Envoy fills the proto itself).
func envoyIngress(id, parent uint64, from, to float64, status string) tspan {
	return tspan{id: id, parent: parent, name: "ingress", kind: server, from: from, to: to, attrs: map[string]any{
		"http.url": "https://llm.example.com/v1/chat/completions?api-version=2024-06-01", "http.method": "POST",
		"http.protocol": "HTTP/1.1", "http.status_code": status, "upstream_cluster": "vllm", "upstream_cluster.name": "vllm",
		"node_id": "front-envoy-5d9f", "zone": "", "component": "proxy", "response_flags": "-",
		"guid:x-request-id": "4f1c9e7a-0d3b-4e59-9d6a-3f7f0d1c2b3a", "downstream_cluster": "-", "user_agent": "openai-python/1.40.0",
		"peer.address": "10.1.2.3", "request_size": "512", "response_size": "2048",
	}}
}

// Envoy (or Kong, or NGINX) names the request only by its full URL: the
// entry was lost, though the README says http.url gives the path.
func TestGatewayEntryFromHTTPURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		gw   map[string]any
		span tspan
	}{
		{"envoy", map[string]any{"service.name": "front-envoy"}, envoyIngress(1, 0, 0, 700, "200")},
		// Kong's root span (kong/observability/tracing/instrumentation.lua):
		// "kong", http.url = scheme://host + request_uri; http.route is
		// the route's first path, "" for a route matched by host.
		{"kong", map[string]any{"service.name": "kong", "service.instance.id": "9c2e", "service.version": "3.7.1"},
			tspan{id: 1, name: "kong", kind: server, from: 0, to: 700, attrs: map[string]any{
				"http.method": "POST", "http.url": "http://llm.example.com/v1/chat/completions?stream=true",
				"http.host": "llm.example.com", "http.scheme": "http", "http.flavor": "1.1", "http.route": "",
				"http.status_code": 200, "kong.request.id": "b7e1"}}},
		// OTel HTTP conventions ≥ 1.21 on a client-side proxy: url.full only.
		{"url.full", map[string]any{"service.name": "edge"}, tspan{id: 1, name: "POST", kind: server, from: 0, to: 700,
			attrs: map[string]any{"url.full": "https://llm.example.com/v1/chat/completions#frag", "http.response.status_code": 200}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ck, sk := newTest(t, DefaultConfig())
			start := ck.now().Add(-time.Minute)
			tid := traceID(2)
			res := map[string]any{"service.name": "vllm-server", "model": "llama-3-8b"}
			mustAdd(t, a, request(tid, start, res, vllmV1Span(9, 1, 30, 680)))
			mustAdd(t, a, request(tid, start, tc.gw, tc.span))
			ck.add(20 * time.Second)
			flush(t, a)
			if len(sk.got) != 1 {
				t.Fatalf("%d samples", len(sk.got))
			}
			if e := sk.got[0].Entry; e != "/v1/chat/completions" {
				t.Errorf("entry %q, want /v1/chat/completions (the path of http.url / url.full)", e)
			}
		})
	}
}

// A caller that propagated its context (an app instrumented with
// OpenTelemetry that exports elsewhere) in front of Envoy, Kong or NGINX,
// which set no span flags, in front of vLLM, whose Python SDK does: the
// vLLM span's remote flag made the trace wait three graces, its parent
// (the proxy's span) arrived meanwhile, and the build found no entry and
// dropped the whole trace as no_entry_span — it never waited MaxWait for
// the proxy's span to stand in for the missing root.
func TestProxyUnderPropagatedContextIsNotDropped(t *testing.T) {
	for _, proxyFirst := range []bool{false, true} {
		a, ck, sk := newTest(t, DefaultConfig())
		start := ck.now().Add(-time.Minute)
		tid := traceID(3)
		res := map[string]any{"service.name": "vllm-server", "model": "llama-3-8b"}
		proxy := request(tid, start, map[string]any{"service.name": "front-envoy"}, envoyIngress(1, 77, 0, 700, "200"))
		server := request(tid, start, res, vllmV1Span(9, 1, 30, 680))
		if proxyFirst {
			mustAdd(t, a, proxy)
			mustAdd(t, a, server)
		} else {
			mustAdd(t, a, server)
			mustAdd(t, a, proxy)
		}
		for i := 0; i < 30 && len(sk.got) == 0; i++ {
			ck.add(5 * time.Second)
			flush(t, a)
		}
		if len(sk.got) != 1 {
			t.Fatalf("proxy first %v: %d samples, want 1 (dropped: no_entry_span %d)", proxyFirst, len(sk.got),
				a.Stats().Dropped[DropNoEntry].Load())
		}
		if s := sk.got[0]; !near(s.TotalMs, 700) || !near(s.StagesMs[correlate.StageGateway], 50) {
			t.Errorf("proxy first %v: total %v gateway %v, want the proxy's 700 and 50", proxyFirst, s.TotalMs,
				s.StagesMs[correlate.StageGateway])
		}
	}
}

// Gateways' own authentication spans: Kong's plugin spans
// ("kong.access.plugin.<plugin>", instrumentation.lua plugin_callback) and
// Envoy's gRPC ext_authz call ("async envoy.service.auth.v3.Authorization.Check
// egress", Grpc::AsyncRequestImpl) counted as gateway, not auth.
func TestGatewayAuthSpansAreAuth(t *testing.T) {
	m := newMapper(DefaultConfig())
	for name, kind := range map[string]string{
		"kong.access.plugin.key-auth":                            "internal",
		"kong.access.plugin.jwt":                                 "internal",
		"kong.access.plugin.openid-connect":                      "internal",
		"kong.access.plugin.basic-auth":                          "internal",
		"async envoy.service.auth.v3.Authorization.Check egress": "client",
	} {
		leaf, inner := m.stages(name, kind, attrs{})
		if correlate.Stage(leaf) != correlate.StageAuth || correlate.Stage(inner) != correlate.StageAuth {
			t.Errorf("%q: stages %d/%d, want auth", name, leaf, inner)
		}
	}
	// Not every plugin is authentication.
	for _, name := range []string{"kong.access.plugin.rate-limiting", "kong.access.plugin.ai-proxy", "kong.header_filter.plugin.cors"} {
		if leaf, _ := m.stages(name, "internal", attrs{}); correlate.Stage(leaf) == correlate.StageAuth {
			t.Errorf("%q taken for auth", name)
		}
	}
}

// Envoy tags a gRPC call's span with the HTTP/2 answer's status, 200
// whatever the call's end, and with grpc.status_code; it sets no span
// status. A call that ended DEADLINE_EXCEEDED or UNAVAILABLE was "ok".
func TestEnvoyGRPCStatusWinsOverItsHTTPStatus(t *testing.T) {
	for code, want := range map[string]string{"0": "ok", "4": "timeout", "14": "error", "13": "error", "5": "ok"} {
		a, ck, sk := newTest(t, DefaultConfig())
		gw := envoyIngress(1, 0, 0, 700, "200")
		gw.attrs["grpc.status_code"] = code
		mustAdd(t, a, request(traceID(1), ck.now().Add(-time.Minute), map[string]any{"service.name": "front-envoy"}, gw))
		mustAdd(t, a, request(traceID(1), ck.now().Add(-time.Minute), map[string]any{"model": "m"}, vllmV1Span(2, 1, 10, 690)))
		ck.add(10 * time.Second)
		flush(t, a)
		if len(sk.got) != 1 || sk.got[0].Status != want {
			t.Errorf("grpc.status_code %s under HTTP 200: samples %+v, want one %s", code, sk.got, want)
		}
	}
}

// In a pod, host.name is the pod's hostname, its name: without
// k8s.node.name every pod was a node of its own.
func TestPodHostnameIsNotANode(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	s := vllmV1Span(1, 0, 0, 700)
	s.flags = flagsParentLocal
	mustAdd(t, a, request(traceID(1), start, map[string]any{"model": "m", "k8s.pod.name": "vllm-7d9f-abcde", "host.name": "vllm-7d9f-abcde"}, s))
	s2 := vllmV1Span(1, 0, 0, 700)
	s2.flags = flagsParentLocal
	mustAdd(t, a, request(traceID(2), start, map[string]any{"model": "m", "k8s.pod.name": "vllm-7d9f-fghij", "host.name": "gpu-node-3"}, s2))
	ck.add(10 * time.Second)
	flush(t, a)
	nodes := map[string]string{}
	for _, g := range sk.got {
		nodes[g.Replica] = g.Node
	}
	if len(sk.got) != 2 || nodes["vllm-7d9f-abcde"] != "" || nodes["vllm-7d9f-fghij"] != "gpu-node-3" {
		t.Fatalf("nodes by replica %v, want none for the pod's own hostname and gpu-node-3 for a real host", nodes)
	}
}

// Triton's spans (opentelemetry-cpp, filled by Triton's tracer) carry no
// span flags; under a caller that propagated its context and exports
// elsewhere, its root "InferRequest" has a parent that never comes. As a
// SERVER span, that parent is remote: the trace is emitted after the
// remote grace (15 s), not held a minute (MaxWait) in memory. So is an
// SDK's from before span flags.
func TestUnflaggedServerSpanUnderACallerIsAnEntry(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	mustAdd(t, a, request(traceID(7), start, map[string]any{"service.name": "triton-inference-server", "k8s.pod.name": "triton-0"},
		tspan{id: 1, parent: 99, name: "InferRequest", kind: server, from: 0, to: 100},
		tspan{id: 2, parent: 1, name: "resnet50", kind: server, from: 10, to: 90,
			events: map[string]float64{"REQUEST_START": 10, "QUEUE_START": 11, "REQUEST_END": 90},
			attrs:  map[string]any{"triton.model_name": "resnet50", "triton.model_version": 3}},
		tspan{id: 3, parent: 2, name: "compute", kind: server, from: 40, to: 89,
			events: map[string]float64{"COMPUTE_START": 40, "COMPUTE_END": 89}},
	))
	ck.add(20 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || !near(sk.got[0].TotalMs, 100) || sk.got[0].Model != "resnet50" {
		t.Fatalf("20 s after Triton's spans came: samples %+v, want one of resnet50, 100 ms", sk.got)
	}
}

// Triton's trace as its tracer (src/tracer.cc) exports it: the root
// "InferRequest", started in the HTTP frontend and carrying its
// HTTP_RECV_*/HTTP_SEND_* timestamps; under it the request span named
// after the model (REQUEST_START, QUEUE_START, REQUEST_END) and its
// "compute" child. The frontend's own time (receiving the request body,
// sending the response: 18 ms here) was counted as model execution
// because "InferRequest" matches infer…; it is the entry's own, gateway.
func TestTritonFrontendTimeIsNotExec(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	mustAdd(t, a, request(traceID(4), start, map[string]any{"service.name": "triton-inference-server"},
		tspan{id: 1, name: "InferRequest", kind: server, from: 0, to: 100,
			events: map[string]float64{"HTTP_RECV_START": 0, "HTTP_RECV_END": 8, "HTTP_SEND_START": 92, "HTTP_SEND_END": 100}},
		tspan{id: 2, parent: 1, name: "resnet50", kind: server, from: 10, to: 90,
			events: map[string]float64{"REQUEST_START": 10, "QUEUE_START": 11, "REQUEST_END": 90},
			attrs:  map[string]any{"triton.model_name": "resnet50", "triton.model_version": 3, "triton.trace_id": 1, "triton.trace_parent_id": 0}},
		tspan{id: 3, parent: 2, name: "compute", kind: server, from: 40, to: 89,
			events: map[string]float64{"COMPUTE_START": 40, "COMPUTE_INPUT_END": 45, "COMPUTE_OUTPUT_START": 79, "COMPUTE_END": 89}},
	))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 {
		t.Fatalf("%d samples", len(sk.got))
	}
	s := sk.got[0]
	// compute 49 − output 10 = 39 ms of execution; the model span's own
	// 80 − 29 queue − 49 compute = 2 ms goes with it or the frontend.
	if e, g := s.StagesMs[correlate.StageExec], s.StagesMs[correlate.StageGateway]; e > 41+1e-6 || g < 20-1e-6 {
		t.Errorf("exec %v ms, gateway %v: want at most 41 and the frontend's 20 ms (HTTP receive and send) as gateway", e, g)
	}
	if q := s.StagesMs[correlate.StageQueue]; !near(q, 29) {
		t.Errorf("queue %v ms, want 29 (QUEUE_START → COMPUTE_START)", q)
	}
}

// A TensorRT-LLM ensemble on Triton: the client calls "ensemble", whose
// span has its steps' model spans under it (preprocessing, tensorrt_llm,
// postprocessing), each with its "compute". The sample was stored under
// the step that took longest, tensorrt_llm — not the model the request was
// addressed to, whose latency curve the incident is about. The model is
// the topmost span naming one in the model server's process.
func TestTritonEnsembleIsTheModelCalled(t *testing.T) {
	a, ck, sk := newTest(t, DefaultConfig())
	start := ck.now().Add(-time.Minute)
	step := func(id, parent uint64, model string, from, to float64) []tspan {
		return []tspan{
			{id: id, parent: parent, name: model, kind: server, from: from, to: to,
				events: map[string]float64{"REQUEST_START": from, "QUEUE_START": from + 1, "REQUEST_END": to},
				attrs:  map[string]any{"triton.model_name": model, "triton.model_version": 1}},
			{id: id + 100, parent: id, name: "compute", kind: server, from: from + 2, to: to - 1,
				events: map[string]float64{"COMPUTE_START": from + 2, "COMPUTE_END": to - 1}},
		}
	}
	spans := []tspan{
		{id: 1, name: "InferRequest", kind: server, from: 0, to: 1000},
		{id: 2, parent: 1, name: "ensemble", kind: server, from: 5, to: 995,
			events: map[string]float64{"REQUEST_START": 5, "QUEUE_START": 6, "REQUEST_END": 995},
			attrs:  map[string]any{"triton.model_name": "ensemble", "triton.model_version": 1}},
	}
	spans = append(spans, step(3, 2, "preprocessing", 10, 60)...)
	spans = append(spans, step(4, 2, "tensorrt_llm", 60, 940)...)
	spans = append(spans, step(5, 2, "postprocessing", 940, 990)...)
	mustAdd(t, a, request(traceID(9), start, map[string]any{"service.name": "triton-inference-server", "k8s.pod.name": "triton-0"}, spans...))
	ck.add(10 * time.Second)
	flush(t, a)
	if len(sk.got) != 1 || sk.got[0].Model != "ensemble" || sk.got[0].Replica != "triton-0" {
		t.Fatalf("samples %+v, want one of model ensemble on triton-0", sk.got)
	}
}
