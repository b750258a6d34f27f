package views

import (
	"net/url"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

func TestStateRoundTrip(t *testing.T) {
	from := time.Date(2026, 10, 6, 7, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		s    State
		want string
	}{
		{"default", State{Base: "/incidents/5"}, "/incidents/5"},
		{"window and filters in fixed order", State{Base: "/incidents/5", From: from, To: from.Add(time.Hour),
			Scope: correlate.Scope{Replica: "r-1", Model: "chat"}, Batch: "5-8"},
			"/incidents/5?from=2026-10-06T07%3A00%3A00Z&to=2026-10-06T08%3A00%3A00Z&model=chat&replica=r-1&batch_size=5-8"},
		{"table state", State{Base: "/s/tok", Tab: "baseline", Sort: "queue", Asc: true, Page: 3},
			"/s/tok?tab=baseline&sort=queue&dir=asc&page=3"},
		{"live", State{Base: "/incidents/1", Live: true}, "/incidents/1?live=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.URL(); got != c.want {
				t.Fatalf("URL() = %s, want %s", got, c.want)
			}
			u, _ := url.Parse(c.want)
			back, err := ParseState(u.Path, u.Query())
			if err != nil {
				t.Fatal(err)
			}
			if back.URL() != c.want {
				t.Fatalf("round trip gives %s", back.URL())
			}
		})
	}
}

func TestParseStateRejects(t *testing.T) {
	for _, q := range []string{"from=yesterday", "from=2026-10-06T08:00:00Z&to=2026-10-06T07:00:00Z", "tab=all", "sort=bogus",
		"dir=up", "page=0", "page=x", "batch_size=big"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseState("/x", v); err == nil {
			t.Errorf("%s accepted", q)
		}
	}
	// Defaults are normalised away so equal views have equal URLs.
	v, _ := url.ParseQuery("tab=slow&sort=total&dir=desc&page=1&from=1791270000")
	s, err := ParseState("/x", v)
	if err != nil || s.URL() != "/x?from=2026-10-06T07%3A00%3A00Z" {
		t.Fatalf("%v %s", err, s.URL())
	}
}

func TestStateFilters(t *testing.T) {
	s := State{Base: "/i", Page: 4, Scope: correlate.Scope{Model: "m"}}
	f := s.WithFilters(map[string]string{"replica": "r", "status": "timeout", "replica_age": "young"})
	if f.URL() != "/i?replica=r&status=timeout" {
		t.Fatalf("WithFilters: %s (model cleared, page reset, unknown dims ignored)", f.URL())
	}
	if got := f.Without("replica").URL(); got != "/i?status=timeout" {
		t.Fatalf("Without: %s", got)
	}
	if DimsKey(f.Dims()) != "replica=r · status=timeout" {
		t.Fatalf("DimsKey: %s", DimsKey(f.Dims()))
	}
	for b, want := range map[string][2]int{"2": {2, 2}, "5-8": {5, 8}} {
		lo, hi, ok := BatchRange(b)
		if !ok || lo != want[0] || hi != want[1] {
			t.Errorf("BatchRange(%s) = %d %d %v", b, lo, hi, ok)
		}
	}
}

// On a scoped view a row's filter is "selected" when the user chose it on
// top of the view's own scope; the own scope alone selects nothing.
func TestFilteredToComparesTheUsersOwnFilters(t *testing.T) {
	st, err := ParseState("/incidents/5", url.Values{"model": {"chat"}, "tenant": {"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	st = st.DefaultTo(correlate.Scope{Model: "chat"})
	if !st.FilteredTo(map[string]string{"tenant": "t1"}) {
		t.Error("model=chat · tenant=t1 on a chat incident: the tenant=t1 row is not selected")
	}
	if st.FilteredTo(map[string]string{"tenant": "t2"}) {
		t.Error("the tenant=t2 row is selected")
	}
	own := st.WithFilters(nil)
	if own.FilteredTo(map[string]string{"model": "chat"}) {
		t.Error("the incident's own scope counts as the user's filter")
	}
	plain, _ := ParseState("/incidents/6", url.Values{"tenant": {"t1"}})
	if !plain.FilteredTo(map[string]string{"tenant": "t1"}) {
		t.Error("unscoped incident: tenant=t1 row not selected")
	}
}
