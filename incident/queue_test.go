package incident

import (
	"context"
	"testing"
	"time"
)

func TestQueueCollapsesRepeatsUntilTaken(t *testing.T) {
	t.Parallel()
	q := NewQueue(2)
	for _, id := range []int64{1, 1, 2, 1} {
		if !q.Add(id) {
			t.Fatalf("Add(%d) refused with room left", id)
		}
	}
	if q.Add(3) {
		t.Fatal("Add(3) accepted past the bound")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int64, 8)
	go q.Work(ctx, func(_ context.Context, id int64) { got <- id })
	for _, want := range []int64{1, 2} {
		select {
		case id := <-got:
			if id != want {
				t.Fatalf("worked %d, want %d", id, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("queue not worked")
		}
	}
	// Taken ids may come again: the change can follow the worker's read.
	q.Add(1)
	select {
	case id := <-got:
		if id != 1 {
			t.Fatalf("worked %d, want 1 again", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a taken id added again was not worked")
	}
}
