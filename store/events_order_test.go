package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// Two senders posting the same new events in different orders (two HA
// exporters, two CD jobs) locked each other's rows in opposite orders:
// Postgres killed one transaction as a deadlock and its sender got a 500.
// Rows are now taken in id order, and each event is stored once.
func TestInsertEventsConcurrentOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	for round := 0; round < 6; round++ {
		var evs []correlate.Event
		for i := 0; i < 300; i++ {
			evs = append(evs, correlate.Event{ID: fmt.Sprintf("r%d-ev-%03d", round, i), Kind: correlate.KindDeploy,
				Time: base.Add(time.Duration(i) * time.Second), Scope: correlate.Scope{Model: "m"}, Source: "test"})
		}
		rev := slices.Clone(evs)
		slices.Reverse(rev)
		var wg sync.WaitGroup
		accepted := make([]int, 2)
		errs := make([]error, 2)
		for k, batch := range [][]correlate.Event{evs, rev} {
			wg.Go(func() { accepted[k], _, errs[k] = st.InsertEvents(ctx, batch) })
		}
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("round %d, sender %d: %v", round, k, err)
			}
		}
		if accepted[0]+accepted[1] != 300 {
			t.Fatalf("round %d: %d + %d new events, want 300 in all", round, accepted[0], accepted[1])
		}
	}
}

// A deadlock or serialization failure rolled everything back: the same
// request may succeed, so it is answered 503 with Retry-After, not 500.
func TestDeadlockIsRetryable(t *testing.T) {
	for _, code := range []string{"40P01", "40001", "08006"} {
		if !store.IsUnavailable(fmt.Errorf("x: %w", &pgconn.PgError{Code: code})) {
			t.Errorf("%s is not retryable", code)
		}
	}
	if store.IsUnavailable(&pgconn.PgError{Code: "23505"}) {
		t.Error("a unique violation is retryable")
	}
}
