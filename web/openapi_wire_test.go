package web_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// wireSchemas names the Go type behind every schema of the document: what
// the server decodes requests into and encodes answers from, and what
// clients (the demo, the simulator, the tests) use.
var wireSchemas = map[string]any{
	"Error":               wire.Error{},
	"Scope":               wire.Scope{},
	"EventIn":             wire.EventIn{},
	"Event":               wire.Event{},
	"Sample":              wire.Sample{},
	"IngestResult":        wire.IngestResult{},
	"Annotation":          wire.Annotation{},
	"AnnotationResult":    wire.AnnotationResult{},
	"AlertmanagerAlert":   wire.AlertmanagerAlert{},
	"AlertmanagerPayload": wire.AlertmanagerPayload{},
	"AlertResult":         wire.AlertResult{},
	"IncidentCreate":      wire.IncidentCreate{},
	"CauseSummary":        wire.CauseSummary{},
	"Incident":            wire.Incident{},
	"ShareLink":           wire.ShareLink{},
	"IncidentPage":        wire.IncidentPage{},
	"Target":              wire.Target{},
	"Evidence":            wire.Evidence{},
	"Cause":               wire.Cause{},
	"Spike":               wire.ListedSpike{},
	"StageShare":          wire.StageShare{},
	"Concentration":       wire.Concentration{},
	"ScopeReport":         wire.ScopeReport{},
	"AlignedEvent":        wire.AlignedEvent{},
	"ReplicaComparison":   wire.ReplicaComparison{},
	"CurveDeviation":      wire.CurveDeviation{},
	"Impact":              wire.Impact{},
	"Headline":            wire.Headline{},
	"ScopeEntry":          wire.ScopeEntry{},
	"Pool":                wire.Pool{},
	"RequestLength":       wire.RequestLength{},
	"Window":              wire.Window{},
	"Analysis":            wire.Analysis{},
	"Point":               wire.Point{},
	"Curve":               wire.Curve{},
	"Timeline":            wire.Timeline{},
	"SpikeList":           wire.SpikeList{},
	"PullSource":          wire.PullSource{},
	"PullGap":             wire.PullGap{},
	"PullStatus":          wire.PullStatus{},
	"WebhookCreate":       wire.WebhookCreate{},
	"Webhook":             wire.Webhook{},
	"WebhookList":         wire.WebhookList{},
	"Delivery":            wire.Delivery{},
	"DeliveryPage":        wire.DeliveryPage{},
	"WaterlineWebhook":    wire.WebhookEvent{},
	"JiraRemoteLink":      wire.JiraRemoteLink{},
	"ServiceNowEvents":    wire.ServiceNowEvents{},
	"SlackMessage":        wire.SlackMessage{},
}

// TestOpenAPIMatchesWireTypes holds every schema of the document to its Go
// type: the same property names as the type's JSON fields (embedded
// structs flattened), and for each a JSON type the Go field encodes to,
// through arrays, maps, inline objects and $refs. A field renamed, added
// or dropped in Go (or in correlate, whose analysis types are the wire's)
// fails here until the document says the same.
func TestOpenAPIMatchesWireTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	schemas := doc.root["components"].(map[string]any)["schemas"].(map[string]any)
	byType := map[reflect.Type]string{}
	for name, v := range wireSchemas {
		if schemas[name] == nil {
			t.Errorf("wireSchemas names %s, which the document does not define", name)
		}
		byType[reflect.TypeOf(v)] = name
	}
	var names []string
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v, ok := wireSchemas[name]
		if !ok {
			t.Errorf("schema %s has no Go type in wireSchemas", name)
			continue
		}
		c := typeCheck{doc: doc, byType: byType}
		c.match(schemas[name], reflect.TypeOf(v), name, true)
		for _, e := range c.errs {
			t.Error(e)
		}
	}
}

// typeCheck compares schemas with Go types.
type typeCheck struct {
	doc    *oaDoc
	byType map[reflect.Type]string // types checked on their own, by schema name
	errs   []string
}

func (c *typeCheck) fail(path, format string, args ...any) {
	c.errs = append(c.errs, path+": "+fmt.Sprintf(format, args...))
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
	// stagesType encodes as {stage: ms} (its own MarshalJSON).
	stagesType = reflect.TypeOf(wire.Stages{})
)

// match checks that t encodes to what schema describes. exact asks for
// the same property names both ways (a schema and its inline parts); a
// $ref reached with a type that is not that schema's own may carry fewer
// (correlate.Spike in a timeline, without the labels an ad-hoc spike
// has), never more.
func (c *typeCheck) match(schema any, t reflect.Type, path string, exact bool) {
	if alts, ok := schema.(map[string]any)["oneOf"].([]any); ok {
		// A nullable reference: {"oneOf": [{"$ref": …}, {"type": "null"}]}.
		alts = slices.DeleteFunc(slices.Clone(alts), func(a any) bool { return a.(map[string]any)["type"] == "null" })
		if len(alts) != 1 {
			c.fail(path, "oneOf with %d alternatives besides null: say which Go type", len(alts))
			return
		}
		schema = alts[0]
	}
	s, err := c.doc.deref(schema)
	if err != nil {
		c.fail(path, "%v", err)
		return
	}
	if ref, ok := schema.(map[string]any)["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		if c.byType[deref(t)] == name {
			return // checked on its own
		}
		path += "→" + name
		exact = false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	types := schemaTypes(s)
	want := jsonKind(t)
	if len(types) > 0 && !slices.Contains(types, want) && want != "any" {
		c.fail(path, "Go %s encodes as %s, the document says %v", t, want, types)
		return
	}
	switch {
	case t == stagesType:
		var props []string
		for k := range s["properties"].(map[string]any) {
			props = append(props, k)
		}
		sort.Strings(props)
		if names := correlate.StageNames(); !sameSet(props, names) {
			c.fail(path, "stages %v, the document lists %v", names, props)
		}
	case want == "array":
		if items, ok := s["items"]; ok {
			c.match(items, t.Elem(), path+"[]", exact)
		}
	case want == "object" && t.Kind() == reflect.Map:
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			c.match(ap, t.Elem(), path+"{}", exact)
		}
	case want == "object" && t.Kind() == reflect.Struct:
		c.object(s, t, path, exact)
	}
}

// object compares a struct's JSON fields with the schema's properties.
func (c *typeCheck) object(s map[string]any, t reflect.Type, path string, exact bool) {
	props, _ := s["properties"].(map[string]any)
	fields := jsonFields(t)
	for name, f := range fields {
		p, ok := props[name]
		if !ok {
			c.fail(path, "Go field %s (%s) is not in the document", name, f.Type)
			continue
		}
		c.match(p, f.Type, path+"."+name, exact)
	}
	if exact {
		for name := range props {
			if _, ok := fields[name]; !ok {
				c.fail(path, "the document's %s is not a field of %s", name, t)
			}
		}
	}
}

// jsonFields are the JSON object members of struct t, by name, with
// embedded structs flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(deref(f.Type)) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

// jsonKind is the JSON type a Go type encodes as.
func jsonKind(t reflect.Type) string {
	switch {
	case t == timeType:
		return "string"
	case t == rawType, t.Kind() == reflect.Interface:
		return "any"
	case t == stagesType:
		return "object"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return t.Kind().String()
}

// schemaTypes lists a schema's "type" (without "null"); empty when it
// names none.
func schemaTypes(s map[string]any) []string {
	var out []string
	switch v := s["type"].(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, x := range v {
			if x != "null" {
				out = append(out, x.(string))
			}
		}
	}
	return out
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}
