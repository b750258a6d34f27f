package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Parameters Postgres cannot hold — a NUL, bytes that are not UTF-8, a
// version past int4 — were 500s from the database; they are the client's
// mistake, a 400 naming the parameter (a 404 for a path segment, which
// then names nothing).
func TestParametersTheDatabaseCannotHoldAre4xx(t *testing.T) {
	e := newAPIEnv(t)
	from, to := testNow.Add(-2*time.Hour).Format(time.RFC3339), testNow.Add(-time.Hour).Format(time.RFC3339)
	in := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"p99 up","start":%q,"end":%q}`, from, to)))
	if in.status != http.StatusCreated {
		t.Fatalf("incident: %d %s", in.status, in.body)
	}
	window := "from=" + from + "&to=" + to
	for path, want := range map[string]struct {
		status int
		field  string
	}{
		"/api/v1/timeline?" + window + "&model=%00":       {400, "model"},
		"/api/v1/timeline?" + window + "&tenant=a%ffb":    {400, "tenant"},
		"/api/v1/spikes?" + window + "&model=%00":         {400, "model"},
		"/api/v1/incidents/1/analysis?version=2147483648": {400, "version"},
		"/api/v1/incidents?status=%00":                    {400, "status"},
	} {
		r := e.get(path, nil)
		if r.status != want.status || r.err.Field != want.field {
			t.Errorf("GET %s: %d field %q (%s), want %d %q", path, r.status, r.err.Field, strings.TrimSpace(string(r.body)), want.status, want.field)
		}
	}
	if r := e.get("/s/%00abc", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /s/%%00abc: %d, want 404", r.status)
	}
}

// A parameter given twice, or a window that ends before it starts, is a
// 400 naming it: the first value won silently ("status=open&status=bogus"
// listed open incidents) and an inverted window answered an empty list.
func TestRepeatedParametersAndInvertedWindowsAre400(t *testing.T) {
	e := newAPIEnv(t)
	from, to := testNow.Add(-2*time.Hour).Format(time.RFC3339), testNow.Add(-time.Hour).Format(time.RFC3339)
	for path, field := range map[string]string{
		"/api/v1/incidents?status=open&status=bogus":                     "status",
		"/api/v1/incidents?from=" + to + "&to=" + from:                   "to",
		"/api/v1/timeline?from=" + from + "&to=" + to + "&from=" + to:    "from",
		"/api/v1/spikes?from=" + from + "&to=" + to + "&model=a&model=b": "model",
	} {
		r := e.get(path, nil)
		if r.status != http.StatusBadRequest || r.err.Field != field {
			t.Errorf("GET %s: %d field %q (%s), want 400 %q", path, r.status, r.err.Field, strings.TrimSpace(string(r.body)), field)
		}
	}
	if r := e.get("/api/v1/incidents?status=open&from="+from+"&to="+to, nil); r.status != http.StatusOK {
		t.Errorf("a good list: %d %s", r.status, r.body)
	}
}
