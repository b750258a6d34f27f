package web_test

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
)

// oaDoc is the OpenAPI document as plain JSON, with a checker for the
// subset of JSON Schema it uses. The checker refuses keywords it does not
// know, so the document cannot drift into constructs nobody checks.
type oaDoc struct {
	root map[string]any
}

func parseOpenAPI(raw []byte) (*oaDoc, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	return &oaDoc{root: root}, nil
}

// resolve follows a local JSON pointer such as #/components/schemas/Incident.
func (d *oaDoc) resolve(ref string) (map[string]any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("only local refs are supported: %q", ref)
	}
	var cur any = d.root
	for _, part := range strings.Split(p, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ref %q: %q is not an object", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("ref %q does not resolve (no %q)", ref, part)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("ref %q is not an object", ref)
	}
	return m, nil
}

// deref returns the object behind a $ref (or the object itself).
func (d *oaDoc) deref(v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object, got %T", v)
	}
	for i := 0; i < 10; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		var err error
		if m, err = d.resolve(ref); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("ref cycle")
}

// annotations are keywords that do not constrain values.
var annotations = map[string]bool{"description": true, "example": true, "examples": true, "title": true,
	"default": true, "writeOnly": true, "readOnly": true, "deprecated": true, "format": true}

// validate checks v (decoded JSON) against schema and returns every
// violation, each prefixed with its JSON path.
func (d *oaDoc) validate(schema any, v any, path string) []string {
	s, err := d.deref(schema)
	if err != nil {
		return []string{path + ": schema: " + err.Error()}
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kw := s[k]
		switch k {
		case "type":
			var types []string
			switch t := kw.(type) {
			case string:
				types = []string{t}
			case []any:
				for _, x := range t {
					types = append(types, x.(string))
				}
			}
			ok := false
			for _, t := range types {
				ok = ok || hasType(v, t)
			}
			if !ok {
				fail("want type %v, got %s", types, jsonType(v))
				return errs // further keywords would only repeat it
			}
		case "properties":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for name, ps := range kw.(map[string]any) {
				if pv, present := obj[name]; present {
					errs = append(errs, d.validate(ps, pv, path+"."+name)...)
				}
			}
		case "required":
			if obj, ok := v.(map[string]any); ok {
				for _, r := range kw.([]any) {
					if _, present := obj[r.(string)]; !present {
						fail("missing required %q", r)
					}
				}
			}
		case "additionalProperties":
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			props, _ := s["properties"].(map[string]any)
			for name, pv := range obj {
				if _, known := props[name]; known {
					continue
				}
				switch a := kw.(type) {
				case bool:
					if !a {
						fail("unexpected property %q", name)
					}
				default:
					errs = append(errs, d.validate(a, pv, path+"."+name)...)
				}
			}
		case "items":
			if list, ok := v.([]any); ok {
				for i, it := range list {
					errs = append(errs, d.validate(kw, it, fmt.Sprintf("%s[%d]", path, i))...)
				}
			}
		case "enum":
			ok := false
			for _, e := range kw.([]any) {
				ok = ok || fmt.Sprint(e) == fmt.Sprint(v) && jsonType(e) == jsonType(v)
			}
			if !ok {
				fail("%v is not one of %v", v, kw)
			}
		case "oneOf":
			n := 0
			for _, alt := range kw.([]any) {
				if len(d.validate(alt, v, path)) == 0 {
					n++
				}
			}
			if n != 1 {
				fail("matches %d of the oneOf alternatives, want exactly 1", n)
			}
		case "allOf":
			for _, alt := range kw.([]any) {
				errs = append(errs, d.validate(alt, v, path)...)
			}
		case "minimum", "maximum":
			if f, ok := v.(float64); ok {
				lim := kw.(float64)
				if (k == "minimum" && f < lim) || (k == "maximum" && f > lim) {
					fail("%v is beyond %s %v", f, k, lim)
				}
			}
		case "minLength", "maxLength":
			if str, ok := v.(string); ok {
				n, lim := float64(len([]rune(str))), kw.(float64)
				if (k == "minLength" && n < lim) || (k == "maxLength" && n > lim) {
					fail("length %v is beyond %s %v", n, k, lim)
				}
			}
		case "minItems", "maxItems":
			if list, ok := v.([]any); ok {
				n, lim := float64(len(list)), kw.(float64)
				if (k == "minItems" && n < lim) || (k == "maxItems" && n > lim) {
					fail("%v items is beyond %s %v", n, k, lim)
				}
			}
		case "pattern":
			if str, ok := v.(string); ok && !regexp.MustCompile(kw.(string)).MatchString(str) {
				fail("%q does not match %s", str, kw)
			}
		case "$ref":
			// resolved above
		default:
			if !annotations[k] {
				fail("schema keyword %q is not understood by this checker", k)
			}
		}
	}
	if s["format"] == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				fail("%q is not an RFC 3339 date-time", str)
			}
		}
	}
	return errs
}

func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return jsonType(v) == t
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// refs lists every $ref in the document.
func (d *oaDoc) refs() []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				out = append(out, r)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(d.root)
	return out
}
