package ingest

import "testing"

// TestKeyPath: an unknown field is named by its path, as a type error
// is ("scope.mdl", not "mdl"), through nested objects and arrays.
func TestKeyPath(t *testing.T) {
	for _, c := range []struct{ raw, name, want string }{
		{`{"title":"x","scope":{"mdl":"a"}}`, "mdl", "scope.mdl"},
		{`{"mdl":1}`, "mdl", "mdl"},
		{`{"alerts":[{"labels":{}},{"labelz":{"a":1}}]}`, "labelz", "alerts[1].labelz"},
		{`{"a":[1,[2,{"x":{"y":3}}]],"b":{"c":{"zz":1}}}`, "zz", "b.c.zz"},
		{`{"a":[1,[2,{"x":{"y":3}}]]}`, "y", "a[1][1].x.y"},
		{`[{"a":1},{"q":2}]`, "q", "[1].q"},
		{`{"a":"q","q":1}`, "q", "q"},
		{`{"bad`, "mdl", "mdl"},
		// A key inside a free-form map (event attrs, alert labels) is
		// never an unknown field: the one outside it is.
		{`{"attrs":{"mdl":1},"scope":{"mdl":"a"}}`, "mdl", "scope.mdl"},
		{`{"alerts":[{"labels":{"statuz":"x"},"statuz":"firing"}]}`, "statuz", "alerts[0].statuz"},
	} {
		if got := keyPath([]byte(c.raw), c.name); got != c.want {
			t.Errorf("keyPath(%s, %s) = %q, want %q", c.raw, c.name, got, c.want)
		}
	}
}
