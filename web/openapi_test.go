package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/web/webhook"
)

// loadOpenAPI reads the document from the source tree (the server embeds
// the same file; TestOpenAPIDescribesRealAnswers checks that it serves it).
func loadOpenAPI(t *testing.T) *oaDoc {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseOpenAPI(raw)
	if err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return d
}

var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true}

// inAPIScope says which routes the document must describe: the JSON API
// under /api/ and the operational endpoints. The HTML UI (/, /incidents/…,
// /login, /s/…, /static/…) is not part of the API and is left out.
func inAPIScope(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/v1/traces"
}

// operations lists "METHOD /path" of every documented operation.
func (d *oaDoc) operations() map[string]map[string]any {
	out := map[string]map[string]any{}
	for path, item := range d.root["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if httpMethods[strings.ToUpper(method)] {
				out[strings.ToUpper(method)+" "+path] = op.(map[string]any)
			}
		}
	}
	return out
}

// TestOpenAPIMatchesRouter holds the document to the real router: every
// route echo registers under /api/ (and /healthz, /readyz, /metrics) is
// documented, and every documented path and method is registered.
func TestOpenAPIMatchesRouter(t *testing.T) {
	doc := loadOpenAPI(t)
	srv := web.NewServer(web.Config{PublicURL: "http://waterline.test"}, web.Deps{})
	param := regexp.MustCompile(`:(\w+)`)
	routed := map[string]bool{}
	for _, r := range srv.Echo().Routes() {
		if !httpMethods[r.Method] || !inAPIScope(r.Path) {
			continue
		}
		routed[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	if len(routed) < 15 {
		t.Fatalf("only %d API routes found; is the router wired?", len(routed))
	}
	documented := doc.operations()
	var missing, extra []string
	for k := range routed {
		if documented[k] == nil {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("openapi.json documents routes that do not exist: %v", extra)
	}
}

// TestOpenAPIDocument checks the document itself: every $ref resolves,
// every example validates against its schema, operation ids are unique,
// every API operation names its scope, and API errors use the Error shape.
func TestOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	if v := doc.root["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi = %v", v)
	}
	for _, r := range doc.refs() {
		if _, err := doc.resolve(r); err != nil {
			t.Error(err)
		}
	}

	checked := 0
	check := func(where string, schema, example any) {
		checked++
		for _, e := range doc.validate(schema, example, "example") {
			t.Errorf("%s: %s", where, e)
		}
	}
	// Examples on schemas, at any depth.
	var walkSchema func(where string, s any)
	walkSchema = func(where string, s any) {
		m, ok := s.(map[string]any)
		if !ok {
			return
		}
		if ex, ok := m["example"]; ok {
			check(where, m, ex)
		}
		for k, v := range m {
			switch k {
			case "properties":
				for name, ps := range v.(map[string]any) {
					walkSchema(where+"."+name, ps)
				}
			case "items", "additionalProperties":
				walkSchema(where+"."+k, v)
			case "allOf", "oneOf":
				for i, alt := range v.([]any) {
					walkSchema(fmt.Sprintf("%s.%s[%d]", where, k, i), alt)
				}
			}
		}
	}
	components := doc.root["components"].(map[string]any)
	for name, s := range components["schemas"].(map[string]any) {
		walkSchema("schema "+name, s)
	}
	// Examples of parameters, bodies and answers.
	checkContent := func(where string, content map[string]any) {
		for mt, media := range content {
			m := media.(map[string]any)
			ex, ok := m["example"]
			if !ok {
				continue
			}
			if mt == "application/x-ndjson" {
				// Each line must be a valid record of the JSON variant.
				items := content["application/json"].(map[string]any)["schema"].(map[string]any)["items"]
				for i, line := range strings.Split(strings.TrimSpace(ex.(string)), "\n") {
					var rec any
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Errorf("%s ndjson line %d: %v", where, i+1, err)
					}
					check(fmt.Sprintf("%s ndjson line %d", where, i+1), items, rec)
				}
				continue
			}
			check(where+" "+mt, m["schema"], ex)
		}
	}
	for name, p := range components["parameters"].(map[string]any) {
		pm := p.(map[string]any)
		if ex, ok := pm["example"]; ok {
			check("parameter "+name, pm["schema"], ex)
		}
	}
	for name, r := range components["responses"].(map[string]any) {
		checkContent("response "+name, r.(map[string]any)["content"].(map[string]any))
	}
	ids := map[string]bool{}
	scopes := map[string]bool{"read": true, "write": true, "admin": true}
	visitOps := func(label string, ops map[string]map[string]any, api func(key string) bool) {
		for key, op := range ops {
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q missing or repeated", label, key, id)
			}
			ids[id] = true
			for _, p := range asList(op["parameters"]) {
				pm, err := doc.deref(p)
				if err != nil {
					t.Errorf("%s: %v", key, err)
					continue
				}
				if ex, ok := pm["example"]; ok {
					check(key+" parameter "+fmt.Sprint(pm["name"]), pm["schema"], ex)
				}
			}
			if rb, ok := op["requestBody"].(map[string]any); ok {
				checkContent(key+" body", rb["content"].(map[string]any))
			}
			responses, _ := op["responses"].(map[string]any)
			if len(responses) == 0 {
				t.Errorf("%s: no responses", key)
			}
			for status, r := range responses {
				rm, err := doc.deref(r)
				if err != nil {
					t.Errorf("%s %s: %v", key, status, err)
					continue
				}
				content, _ := rm["content"].(map[string]any)
				checkContent(key+" "+status, content)
				if api(key) && status >= "400" {
					js, _ := content["application/json"].(map[string]any)
					if ref, _ := js["schema"].(map[string]any)["$ref"].(string); ref != "#/components/schemas/Error" {
						t.Errorf("%s %s: an API error must use the Error schema", key, status)
					}
				}
			}
			sec, ok := op["security"].([]any)
			if !ok {
				t.Errorf("%s: no security (use [] for public operations)", key)
				continue
			}
			if api(key) {
				scope, _ := op["x-waterline-scope"].(string)
				req, _ := sec[0].(map[string]any)["bearer"].([]any)
				if len(sec) != 1 || len(req) != 1 || req[0] != scope || !scopes[scope] {
					t.Errorf("%s: security %v with x-waterline-scope %q; want one bearer requirement naming read, write or admin", key, sec, scope)
				}
			}
		}
	}
	visitOps("path", doc.operations(), func(key string) bool { return strings.Contains(key, " /api/v1/") })
	hooks := map[string]map[string]any{}
	for name, item := range doc.root["webhooks"].(map[string]any) {
		hooks["POST webhook "+name] = item.(map[string]any)["post"].(map[string]any)
	}
	visitOps("webhook", hooks, func(string) bool { return false })
	if checked < 40 {
		t.Fatalf("only %d examples checked; the walk is broken", checked)
	}
	// The checker is not vacuous: a wrong example fails.
	if len(doc.validate(map[string]any{"$ref": "#/components/schemas/Incident"}, map[string]any{"id": "one"}, "x")) == 0 {
		t.Fatal("the schema checker accepts anything")
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestOpenAPIScopesEnforced calls every documented API operation without a
// token (401) and with a token one scope too small (403): the scopes the
// document names are the ones the router enforces.
func TestOpenAPIScopesEnforced(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newAPIEnv(t)
	below := map[string]string{"write": e.read, "admin": e.write}
	for key, op := range doc.operations() {
		method, path, _ := strings.Cut(key, " ")
		if op["x-waterline-scope"] == nil {
			if r := e.do(request{method: method, path: path}); r.status != http.StatusOK && r.status != http.StatusServiceUnavailable {
				t.Errorf("%s without a token: %d, want it public", key, r.status)
			}
			continue
		}
		path = strings.ReplaceAll(path, "{id}", "1")
		// Each encoding a body may come in: the answer follows it where
		// the operation answers in the request's encoding (OTLP).
		for _, ctype := range requestTypes(op) {
			r := e.do(request{method: method, path: path, ctype: ctype})
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s without a token: %d, want 401", key, r.status)
			}
			documentedAnswer(t, doc, key, ctype, r)
			scope := op["x-waterline-scope"].(string)
			if tok, ok := below[scope]; ok {
				r := e.do(request{method: method, path: path, token: tok, ctype: ctype})
				if r.status != http.StatusForbidden {
					t.Errorf("%s with a token below %s: %d, want 403", key, scope, r.status)
				}
				documentedAnswer(t, doc, key, ctype, r)
			}
		}
	}
}

// requestTypes are the media types an operation's body may be sent as
// ("" for an operation without a body).
func requestTypes(op map[string]any) []string {
	rb, _ := op["requestBody"].(map[string]any)
	content, _ := rb["content"].(map[string]any)
	if len(content) == 0 {
		return []string{""}
	}
	var out []string
	for mt := range content {
		out = append(out, mt)
	}
	sort.Strings(out)
	return out
}

// documentedAnswer checks an answer against the operation's documented
// response of its status: the status is listed, the answer's media type
// is one the document gives it, and a JSON body fits its schema (the 401
// of /v1/traces is OTLP's google.rpc.Status, not the Error the document
// said), and every header the document promises is there.
func documentedAnswer(t *testing.T, doc *oaDoc, key, sent string, r response) {
	t.Helper()
	resp, ok := doc.operations()[key]["responses"].(map[string]any)[strconv.Itoa(r.status)]
	if !ok {
		t.Errorf("%s (%s) answered %d, which the document does not list", key, sent, r.status)
		return
	}
	rm, err := doc.deref(resp)
	if err != nil {
		t.Fatal(err)
	}
	headers, _ := rm["headers"].(map[string]any)
	for h := range headers {
		if r.header.Get(h) == "" {
			t.Errorf("%s (%s): %d without the documented %s header", key, sent, r.status, h)
		}
	}
	content, _ := rm["content"].(map[string]any)
	if len(content) == 0 {
		return
	}
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	media, ok := content[mt].(map[string]any)
	if !ok {
		t.Errorf("%s (%s): %d answered as %q, which the document does not give it", key, sent, r.status, mt)
		return
	}
	if mt != "application/json" {
		return
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Errorf("%s (%s): %d body is not JSON: %s", key, sent, r.status, r.body)
		return
	}
	for _, msg := range doc.validate(media["schema"], v, "body") {
		t.Errorf("%s (%s): %d: %s", key, sent, r.status, msg)
	}
}

// apiCall is one real request whose answer must match the document.
type apiCall struct {
	t    *testing.T
	doc  *oaDoc
	e    *apiEnv
	seen map[string]bool // operations exercised
}

// call sends the request and validates the answer against the documented
// response of that operation and status; it returns the decoded body.
func (a *apiCall) call(op, path, token, ctype string, body []byte) (int, any) {
	a.t.Helper()
	method, tmpl, _ := strings.Cut(op, " ")
	r := a.e.do(request{method: method, path: path, token: token, ctype: ctype, body: body})
	ops := a.doc.operations()
	o := ops[op]
	if o == nil {
		a.t.Fatalf("%s is not documented", op)
	}
	a.seen[op] = true
	resp, ok := o["responses"].(map[string]any)[strconv.Itoa(r.status)]
	if !ok {
		a.t.Errorf("%s %s answered %d, which the document does not list: %s", method, path, r.status, r.body)
		return r.status, nil
	}
	rm, _ := a.doc.deref(resp)
	content, _ := rm["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.body) > 0 {
			a.t.Errorf("%s %s: %d has a body the document does not describe", method, path, r.status)
		}
		return r.status, nil
	}
	var v any
	if js, ok := content["application/json"].(map[string]any); ok {
		if err := json.Unmarshal(r.body, &v); err != nil {
			a.t.Errorf("%s %s: %d body is not JSON: %s", method, path, r.status, r.body)
			return r.status, nil
		}
		for _, err := range a.doc.validate(js["schema"], v, "body") {
			a.t.Errorf("%s %s (%s, %d): %s", method, path, tmpl, r.status, err)
		}
	}
	return r.status, v
}

// exampleOf returns the documented request example of an operation for a
// media type, as bytes to send.
func (a *apiCall) exampleOf(op, mediaType string) []byte {
	a.t.Helper()
	rb := a.doc.operations()[op]["requestBody"].(map[string]any)
	media := rb["content"].(map[string]any)[mediaType].(map[string]any)
	ex, ok := media["example"]
	if !ok { // the schema's own example
		s, err := a.doc.deref(media["schema"])
		if err != nil || s["example"] == nil {
			a.t.Fatalf("%s %s: no example", op, mediaType)
		}
		ex = s["example"]
	}
	if s, ok := ex.(string); ok {
		return recent([]byte(s))
	}
	b, _ := json.Marshal(ex)
	return recent(b)
}

var rfc3339 = regexp.MustCompile(`"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"`)

// recent moves every time in a documented example by whole days, so that
// its newest time lies in the day before the test clock: the document's
// examples carry fixed dates, and the server refuses records more than a
// year old. Times of day, and so the example's shape, are kept.
func recent(ex []byte) []byte {
	var newest time.Time
	for _, m := range rfc3339.FindAllSubmatch(ex, -1) {
		if t, err := time.Parse(time.RFC3339Nano, string(m[1])); err == nil && t.After(newest) {
			newest = t
		}
	}
	if newest.IsZero() {
		return ex
	}
	day := 24 * time.Hour
	shift := testNow.Add(-time.Hour).Sub(newest).Truncate(day)
	if newest.Add(shift).After(testNow.Add(-time.Hour)) {
		shift -= day // Truncate rounds toward zero; a negative shift must round down
	}
	return rfc3339.ReplaceAllFunc(ex, func(m []byte) []byte {
		t, err := time.Parse(time.RFC3339Nano, string(m[1:len(m)-1]))
		if err != nil {
			return m
		}
		return []byte(`"` + t.Add(shift).Format(time.RFC3339Nano) + `"`)
	})
}

// TestOpenAPIDescribesRealAnswers sends the document's own request
// examples to a real server on a real database, walks an incident through
// its life, and checks every answer against the documented schema.
func TestOpenAPIDescribesRealAnswers(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newAPIEnv(t)
	a := &apiCall{t: t, doc: doc, e: e, seen: map[string]bool{}}
	ctx := context.Background()

	raw, _ := os.ReadFile("openapi.json")
	if r := e.do(request{method: "GET", path: "/api/openapi.json"}); r.status != 200 || !bytes.Equal(r.body, raw) {
		t.Fatalf("GET /api/openapi.json: %d, same as the file: %v", r.status, bytes.Equal(r.body, raw))
	}
	a.seen["GET /api/openapi.json"] = true
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		res, err := http.Get(e.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s: %d %s", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
		a.seen["GET "+p] = true
	}

	// Ingest with the document's examples, as JSON arrays and as NDJSON.
	for _, op := range []string{"POST /api/v1/events", "POST /api/v1/samples"} {
		path := strings.TrimPrefix(op, "POST ")
		if st, _ := a.call(op, path, e.write, "application/x-ndjson", a.exampleOf(op, "application/x-ndjson")); st != 200 {
			t.Fatalf("%s NDJSON example: %d", op, st)
		}
		if st, v := a.call(op, path, e.write, "application/json", a.exampleOf(op, "application/json")); st != 200 || v.(map[string]any)["duplicates"] == 0.0 {
			t.Fatalf("%s JSON example: %d %v (the same records again must be duplicates)", op, st, v)
		}
	}
	a.call("POST /api/v1/events", "/api/v1/events", e.write, "application/x-ndjson", []byte(`{"kind":"deploi","time":"2026-10-06T07:54:30Z"}`+"\n"))
	a.call("POST /api/v1/samples", "/api/v1/samples", e.write, "text/csv", []byte("a,b\n"))
	if st, v := a.call("POST /api/v1/alerts/alertmanager", "/api/v1/alerts/alertmanager", e.write, "application/json",
		a.exampleOf("POST /api/v1/alerts/alertmanager", "application/json")); st != 200 {
		t.Fatalf("Alertmanager example: %d %v", st, v)
	}

	// The receivers of other tools' formats: OTLP/JSON traces and a
	// Grafana annotation (its documented example, at a recent time).
	if st, _ := a.call("POST /v1/traces", "/v1/traces", e.write, "application/json", a.exampleOf("POST /v1/traces", "application/json")); st != 200 {
		t.Fatalf("OTLP/JSON example: %d", st)
	}
	a.call("POST /v1/traces", "/v1/traces", e.write, "application/json", []byte(`{"resourceSpans": 3}`))
	var note map[string]any
	_ = json.Unmarshal(a.exampleOf("POST /api/annotations", "application/json"), &note)
	note["time"], note["timeEnd"] = testNow.Add(-time.Hour).UnixMilli(), testNow.Add(-58*time.Minute).UnixMilli()
	noteBody, _ := json.Marshal(note)
	st, added := a.call("POST /api/annotations", "/api/annotations", e.write, "application/json", noteBody)
	if st != 200 {
		t.Fatalf("annotation example: %d", st)
	}
	a.call("POST /api/annotations", "/api/annotations", e.write, "application/json", []byte(`{"text":1}`))
	notePath := fmt.Sprintf("/api/annotations/%.0f", added.(map[string]any)["id"].(float64))
	end, _ := json.Marshal(map[string]any{"timeEnd": testNow.Add(-50 * time.Minute).UnixMilli()})
	if st, _ := a.call("PATCH /api/annotations/{id}", notePath, e.write, "application/json", end); st != 200 {
		t.Fatalf("PATCH %s: %d", notePath, st)
	}
	if st, _ := a.call("PUT /api/annotations/{id}", notePath, e.write, "application/json", noteBody); st != 200 {
		t.Fatalf("PUT %s: %d", notePath, st)
	}
	a.call("PATCH /api/annotations/{id}", notePath, e.write, "application/json", []byte(`{"timeEnd":"soon"}`))
	if st, _ := a.call("DELETE /api/annotations/{id}", notePath, e.write, "", nil); st != 200 {
		t.Fatalf("DELETE %s: %d", notePath, st)
	}
	a.call("DELETE /api/annotations/{id}", notePath, e.write, "", nil)

	// An incident over stored curves with a spike, analysed for real.
	e.writeSpikeCurves()
	from, to := curveT0.Format(time.RFC3339), curveT0.Add(2*time.Hour).Format(time.RFC3339)
	a.call("POST /api/v1/incidents", "/api/v1/incidents", e.write, "application/json", a.exampleOf("POST /api/v1/incidents", "application/json"))
	a.call("POST /api/v1/incidents", "/api/v1/incidents", e.write, "application/json", []byte(`{"title":""}`))
	st, v := a.call("POST /api/v1/incidents", "/api/v1/incidents", e.write, "application/json",
		[]byte(fmt.Sprintf(`{"title":"chat slow","start":%q,"end":%q}`, curveT0.Add(40*time.Minute).Format(time.RFC3339), to)))
	if st != 201 {
		t.Fatalf("create incident: %d", st)
	}
	id := int64(v.(map[string]any)["id"].(float64))
	ip := fmt.Sprintf("/api/v1/incidents/%d", id)
	a.call("GET /api/v1/incidents/{id}/analysis", ip+"/analysis", e.read, "", nil) // pending
	if _, err := diagnose.NewAnalyzer(e.st, diagnose.AnalyzerOptions{}).Analyze(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if _, v := a.call("GET /api/v1/incidents/{id}/analysis", ip+"/analysis", e.read, "", nil); v.(map[string]any)["status"] != "ready" {
		t.Fatalf("analysis: %v", v)
	}
	// Every part of an analysis filled in, through the same path a stored
	// result takes: the Go types' JSON must match the document too.
	full := fullAnalysis()
	ver, err := e.st.StartAnalysis(ctx, id, "full")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(full)
	if err := e.st.FinishAnalysis(ctx, id, ver, body, ""); err != nil {
		t.Fatal(err)
	}
	a.call("GET /api/v1/incidents/{id}/analysis", ip+"/analysis", e.read, "", nil)
	a.call("GET /api/v1/incidents/{id}/analysis", ip+"/analysis?version=x", e.read, "", nil)
	a.call("GET /api/v1/incidents/{id}", ip, e.read, "", nil)
	a.call("GET /api/v1/incidents/{id}", "/api/v1/incidents/999999", e.read, "", nil)
	a.call("GET /api/v1/incidents", "/api/v1/incidents?status=open&limit=1", e.read, "", nil)
	a.call("GET /api/v1/incidents", "/api/v1/incidents?status=maybe", e.read, "", nil)
	a.call("GET /api/v1/spikes", "/api/v1/spikes?from="+from+"&to="+to, e.read, "", nil)
	a.call("GET /api/v1/spikes", "/api/v1/spikes?from="+from+"&to="+to+"&query=up", e.read, "", nil) // no Prometheus: 503
	a.call("GET /api/v1/spikes", "/api/v1/spikes?from="+from, e.read, "", nil)
	a.call("GET /api/v1/timeline", "/api/v1/timeline?from="+from+"&to="+to+"&model=chat", e.read, "", nil)
	a.call("GET /api/v1/timeline", "/api/v1/timeline?from="+from+"&to="+to+"&roles=nope", e.read, "", nil)
	a.call("GET /api/v1/pull/status", "/api/v1/pull/status", e.read, "", nil)

	// Webhooks, with a delivery in the log.
	st, v = a.call("POST /api/v1/webhooks", "/api/v1/webhooks", e.admin, "application/json", a.exampleOf("POST /api/v1/webhooks", "application/json"))
	if st != 201 {
		t.Fatalf("webhook example: %d", st)
	}
	hook := int64(v.(map[string]any)["id"].(float64))
	a.call("POST /api/v1/webhooks", "/api/v1/webhooks", e.admin, "application/json", []byte(`{"url":"x"}`))
	a.call("GET /api/v1/webhooks", "/api/v1/webhooks", e.admin, "", nil)
	if st, v := a.call("POST /api/v1/incidents/{id}/share", ip+"/share", e.write, "", nil); st != 201 || !strings.Contains(v.(map[string]any)["url"].(string), "/s/") {
		t.Fatalf("share: %d %v", st, v)
	}
	a.call("POST /api/v1/incidents/{id}/share", "/api/v1/incidents/999999/share", e.write, "", nil)
	a.call("DELETE /api/v1/incidents/{id}/share", ip+"/share", e.write, "", nil)
	a.call("DELETE /api/v1/incidents/{id}/share", "/api/v1/incidents/999999/share", e.write, "", nil)
	a.call("POST /api/v1/incidents/{id}/resolve", ip+"/resolve", e.write, "", nil)
	if err := webhook.NewNotifier(e.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"}).NotifyIncident(ctx, id); err != nil {
		t.Fatal(err)
	}
	hp := fmt.Sprintf("/api/v1/webhooks/%d", hook)
	if _, v := a.call("GET /api/v1/webhooks/{id}/deliveries", hp+"/deliveries", e.admin, "", nil); len(v.(map[string]any)["deliveries"].([]any)) == 0 {
		t.Fatal("no delivery queued for the resolved incident")
	}
	a.call("DELETE /api/v1/webhooks/{id}", hp, e.admin, "", nil)
	a.call("DELETE /api/v1/webhooks/{id}", hp, e.admin, "", nil) // 404
	a.call("GET /api/v1/webhooks/{id}/deliveries", hp+"/deliveries", e.admin, "", nil)

	for op := range doc.operations() {
		if !a.seen[op] {
			t.Errorf("%s was not exercised", op)
		}
	}
}

// fullAnalysis is an analysis with every part present.
func fullAnalysis() correlate.Analysis {
	t0 := curveT0.Add(100 * time.Minute)
	gap := t0.Add(-10 * time.Minute)
	ev := correlate.Evidence{Name: "deploy_before_onset", Summary: "deploy 66 s before the onset", Value: 66, Strength: 0.9, Weight: 0.3, Link: "/incidents/1#events"}
	event := correlate.Event{ID: "e1", Kind: correlate.KindDeploy, Time: t0.Add(-time.Minute), Scope: correlate.Scope{Model: "chat", Version: "v2"},
		Source: "argo", Summary: "v1 -> v2", Attrs: map[string]any{"revision": 7}}
	return correlate.Analysis{
		Window: correlate.Window{From: curveT0, To: curveT0.Add(2 * time.Hour)}, Onset: &t0, OnsetGapFrom: &gap,
		Spikes: []correlate.Spike{{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"},
			Start: t0, End: t0.Add(15 * time.Minute), Onset: t0, PeakTime: t0.Add(time.Minute), PeakValue: 800, Baseline: 200,
			Direction: correlate.Up, DetectedAt: t0.Add(time.Minute), Score: 0.8, Z: 12, BaselineKind: "window", Severity: "page", SLOMs: 400}},
		Scope: correlate.ScopeReport{Breadth: "version", Summary: "only chat v2", Models: []string{"chat"}, Versions: []string{"v2"},
			Replicas: []string{"chat-1"}, Nodes: []string{"gpu-1"}, Tenants: []string{"t-a"}},
		Causes: []correlate.Cause{{Category: correlate.CatRelease, Score: 0.8, Target: correlate.Target{Model: "chat", Version: "v2", Replicas: []string{"chat-1"}, Models: []string{"chat"}},
			Summary: "chat v2 is slower", Evidence: []correlate.Evidence{ev}, CounterEvidence: []correlate.Evidence{ev}, Actions: []string{"roll back"}}},
		Stages:      []correlate.StageShare{{Stage: "exec", BeforeMs: 40, DuringMs: 90, DeltaMs: 50, DeltaLoMs: 45, DeltaHiMs: 55, Share: 0.9}},
		StageSource: "samples",
		Concentration: []correlate.Concentration{{Dims: map[string]string{"version": "v2"}, SelectionPct: 90, BaselinePct: 30, RiskRatio: 10,
			Support: 0.9, P99WithoutMs: 210, P99DeltaMs: 500, Count: 100}},
		Events: []correlate.AlignedEvent{{Event: event, OffsetS: -60, TimeWeight: 0.9, ScopeMatch: 1}},
		Replicas: []correlate.ReplicaComparison{{Replica: "chat-1", Model: "chat", Version: "v2", Node: "gpu-1", P99BeforeMs: 200, P99DuringMs: 800,
			PeerP99Ms: 210, PeerZ: 8, LoadBefore: 1, LoadDuring: 1.1, Young: true, Outlier: true}},
		Deviations: []correlate.CurveDeviation{{Key: "latency_p99|model|model=chat", Role: correlate.RoleLatencyP99, Level: correlate.LevelModel,
			Scope: correlate.Scope{Model: "chat"}, Before: 200, During: 800, Deviation: 9}},
		P99BeforeMs: 200, P99DuringMs: 800,
		Samples:   correlate.SampleSummary{Total: 100, Weighted: 1000, Slow: 10, SlowMs: map[string]float64{"chat": 300}, SlowBasis: correlate.SlowBasisMixed},
		Checklist: []correlate.ChecklistStep{{Step: "scope", Answer: "only chat v2"}},
	}
}

// TestOpenAPIQueryParametersAreTheHandlers holds every GET under /api/v1
// to the query parameters the document lists for it: one it does not
// list is a 400 naming it, and the answer lists exactly the documented
// ones. A filter the handler does not read was ignored before
// (tenant= on /api/v1/spikes answered every tenant's spikes, timeline's
// levels= there was dropped), and a parameter the handler reads but
// the document leaves out shows up here as one too many.
func TestOpenAPIQueryParametersAreTheHandlers(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newAPIEnv(t)
	const probe = "zz_not_a_parameter"
	checked := 0
	for key, op := range doc.operations() {
		method, path, _ := strings.Cut(key, " ")
		if method != http.MethodGet || !strings.HasPrefix(path, "/api/v1/") {
			continue
		}
		var documented []string
		for _, p := range asList(op["parameters"]) {
			pm, err := doc.deref(p)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if pm["in"] == "query" {
				documented = append(documented, pm["name"].(string))
			}
		}
		sort.Strings(documented)
		r := e.do(request{method: method, path: strings.ReplaceAll(path, "{id}", "1") + "?" + probe + "=1", token: e.admin})
		checked++
		if _, ok := op["responses"].(map[string]any)["400"]; !ok {
			t.Errorf("%s: the document lists no 400, which an unknown parameter answers", key)
		}
		if r.status != http.StatusBadRequest || r.err.Field != probe {
			t.Errorf("%s?%s=1: %d field %q (%s), want a 400 naming it", key, probe, r.status, r.err.Field, strings.TrimSpace(string(r.body)))
			continue
		}
		_, list, _ := strings.Cut(r.err.Error, "this endpoint takes ")
		var takes []string
		if list != "no query parameters" {
			takes = strings.Split(list, ", ")
		}
		sort.Strings(takes)
		if strings.Join(takes, ",") != strings.Join(documented, ",") {
			t.Errorf("%s takes %v, the document lists %v", key, takes, documented)
		}
	}
	if checked < 8 {
		t.Fatalf("only %d GET operations checked", checked)
	}
}
