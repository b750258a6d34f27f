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
