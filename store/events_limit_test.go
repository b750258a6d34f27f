package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A crash loop posts thousands of restarts; a page or a snapshot reads
// events up to a limit. The oldest-first cut kept only restarts and hid
// the deploy that came after them — the one change someone can undo.
// Under a limit, the changes people make come first, then the fleet's
// reactions, then the rest; the answer is still in time order.
func TestEventLimitKeepsChangesFirst(t *testing.T) {
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var evs []correlate.Event
	for i := range 50 {
		evs = append(evs, correlate.Event{ID: fmt.Sprintf("r%d", i), Kind: correlate.KindReplicaRestart, Time: t0.Add(time.Duration(i) * time.Second),
			Scope: correlate.Scope{Model: "chat", Replica: "chat-0"}})
	}
	evs = append(evs,
		correlate.Event{ID: "scale", Kind: correlate.KindScaleUp, Time: t0.Add(2 * time.Minute), Scope: correlate.Scope{Model: "chat"}},
		correlate.Event{ID: "deploy", Kind: correlate.KindDeploy, Time: t0.Add(3 * time.Minute), Scope: correlate.Scope{Model: "chat", Version: "v2"}})
	if _, _, err := st.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	got, err := st.Events(ctx, store.EventFilter{From: t0, To: t0.Add(time.Hour), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if len(got) != 10 || !slices.Contains(ids, "deploy") || !slices.Contains(ids, "scale") ||
		!slices.IsSortedFunc(got, func(a, b correlate.Event) int { return a.Time.Compare(b.Time) }) {
		t.Fatalf("limit 10 kept %v", ids)
	}
	if ids[0] != "r0" {
		t.Errorf("the restarts kept are not the earliest: %v", ids)
	}
}

// A frozen incident's page reads its snapshot's events the same way.
func TestSnapshotEventLimitKeepsChangesFirst(t *testing.T) {
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var evs []correlate.Event
	for i := range 50 {
		evs = append(evs, correlate.Event{ID: fmt.Sprintf("r%02d", i), Kind: correlate.KindReplicaRestart, Time: t0.Add(time.Duration(i) * time.Second)})
	}
	evs = append(evs, correlate.Event{ID: "rollback", Kind: correlate.KindRollback, Time: t0.Add(3 * time.Minute)})
	sn := &store.Snapshot{FrozenEvents: evs}
	got, err := sn.Events(context.Background(), store.EventFilter{From: t0, To: t0.Add(time.Hour), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[len(got)-1].ID != "rollback" || got[0].ID != "r00" {
		t.Fatalf("limit 10 kept %v", got)
	}
}
