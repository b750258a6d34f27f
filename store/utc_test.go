package store_test

import (
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store/storetest"
)

// Every time the store reads comes back in UTC, whatever the process's
// zone: pull status answered last_success "…T17:56:54+09:00" next to a
// cursor "…T08:56:54Z" on a server with TZ=Asia/Tokyo.
func TestTimesReadInUTC(t *testing.T) {
	st, pool := storetest.NewWithPool(t)
	now := time.Now().Truncate(time.Second)
	if err := st.AdvancePullCursor(t.Context(), "latency", now.Add(-time.Minute), now, 10); err != nil {
		t.Fatal(err)
	}
	srcs, err := st.PullSources(t.Context())
	if err != nil || len(srcs) != 1 {
		t.Fatalf("%v %v", srcs, err)
	}
	for name, at := range map[string]*time.Time{"cursor": &srcs[0].Cursor, "last_success": srcs[0].LastSuccess, "last_attempt": srcs[0].LastAttempt} {
		if at == nil || at.Location() != time.UTC {
			t.Errorf("%s read as %v, want UTC", name, at)
		}
	}
	var raw time.Time
	if err := pool.QueryRow(t.Context(), `SELECT now()`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw.Location() != time.UTC {
		t.Errorf("a timestamptz read as %v, want UTC", raw)
	}
}
