package request_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/web/request"
)

// field is the status and field of a request error.
func field(t *testing.T, err error) (int, string) {
	t.Helper()
	var re *request.Error
	if !errors.As(err, &re) {
		t.Fatalf("%v (%T) is not a request.Error", err, err)
	}
	return re.Status, re.Field
}

func TestRangeReadsBothFormsAndNamesTheBadParameter(t *testing.T) {
	t.Parallel()
	from, to, err := request.Range(url.Values{"from": {"2026-03-02T06:00:00Z"}, "to": {"1772438400"}}, time.Time{}, time.Time{}, 0)
	if err != nil || !from.Equal(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)) || to.Unix() != 1772438400 {
		t.Fatalf("from %v to %v (%v)", from, to, err)
	}
	for q, want := range map[string]string{
		"to=2026-03-02T07:00:00Z":                           "from",
		"from=yesterday&to=2026-03-02T07:00:00Z":            "from",
		"from=2026-03-02T07:00:00Z&to=2026-03-02T06:00:00Z": "to",
		"from=2026-01-01T00:00:00Z&to=2026-03-02T06:00:00Z": "from", // longer than the maximum
		// Times no column or JSON answer can hold were 500s.
		"from=9000000000000000&to=9000000000003600":          "from",
		"from=253402300800&to=253402304400":                  "from",
		"from=10000-01-01T00:00:00Z&to=2026-03-02T06:00:00Z": "from",
		"from=-62135596800&to=2026-03-02T06:00:00Z":          "from",
	} {
		v, _ := url.ParseQuery(q)
		_, _, err := request.Range(v, time.Time{}, time.Time{}, 31*24*time.Hour)
		if st, f := field(t, err); st != http.StatusBadRequest || f != want {
			t.Errorf("%s: %d %s, want 400 %s", q, st, f, want)
		}
	}
}

func TestIDAndLimit(t *testing.T) {
	t.Parallel()
	if id, err := request.ID("42"); err != nil || id != 42 {
		t.Fatalf("ID(42) = %d, %v", id, err)
	}
	for _, bad := range []string{"0", "-1", "x", ""} {
		if st, _ := field(t, must(request.ID(bad))); st != http.StatusNotFound {
			t.Errorf("ID(%q): %d, want 404: an id that names nothing", bad, st)
		}
	}
	if n, err := request.Limit(url.Values{}, 50, 500); n != 50 || err != nil {
		t.Fatalf("default limit %d (%v)", n, err)
	}
	if st, f := field(t, must(request.Limit(url.Values{"limit": {"501"}}, 50, 500))); st != 400 || f != "limit" {
		t.Fatalf("limit 501: %d %s", st, f)
	}
}

func must[T any](_ T, err error) error { return err }
