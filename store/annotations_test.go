package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// An annotation is found by the number its POST answered, a prefix of its
// id, through an index: PATCH, PUT and DELETE of one annotation read one
// row, not the whole events table (DELETE has no concurrency bound, so a
// full scan per call let a token holder run as many as it liked).
func TestEventByIDPrefixUsesAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	var evs []correlate.Event
	for i := range 5000 {
		evs = append(evs, correlate.Event{ID: fmt.Sprintf("z-deploy:%06d", i), Kind: correlate.KindDeploy, Time: base.Add(time.Duration(i) * time.Second)})
	}
	evs = append(evs, correlate.Event{ID: "annotation:00000000002a9f3c1", Kind: correlate.KindAnnotation, Time: base, Summary: "x"},
		correlate.Event{ID: "annotation:00000000002b", Kind: correlate.KindAnnotation, Time: base, Summary: "y"})
	if _, _, err := st.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// pg_stat_xact_* counts the current transaction's scans: read them
	// around the lookup on one connection, inside one transaction.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// Rows read: sequentially, and fetched through an index (the
	// primary key walked in id order, filtering on the prefix, reads
	// every row before a match, or all of them when none matches).
	read := func() int64 {
		var n int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relname = 'events'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	txStore := store.New(tx)
	for _, c := range []struct {
		prefix, summary string
	}{{"annotation:00000000002a", "x"}, {"annotation:00000000002b", "y"}, {"annotation:00000000002c", ""}} {
		n0 := read()
		e, err := txStore.EventByIDPrefix(ctx, c.prefix)
		if c.summary == "" && !errors.Is(err, store.ErrNotFound) || c.summary != "" && (err != nil || e.Summary != c.summary) {
			t.Fatalf("%s: %+v %v", c.prefix, e, err)
		}
		if n := read() - n0; n > 3 {
			t.Errorf("%s: the lookup read %d rows of the events table", c.prefix, n)
		}
	}
}
