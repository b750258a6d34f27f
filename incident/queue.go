package incident

import (
	"context"
	"sync"
)

// Queue is a bounded queue of incident ids for one background worker (the
// analyzer, the webhook notifier, the freezer) that collapses repeats: an
// id already waiting is not added again, since the worker reads the
// incident's newest state when it gets to it. Once the worker has taken
// an id, adding it again queues it anew: the change may have come after
// the worker read.
type Queue struct {
	ids     chan int64
	mu      sync.Mutex
	waiting map[int64]bool
}

// NewQueue returns a queue that holds up to size ids.
func NewQueue(size int) *Queue {
	return &Queue{ids: make(chan int64, size), waiting: map[int64]bool{}}
}

// Add queues id unless it is already waiting. It never blocks (callers
// are request goroutines): it reports false when the queue is full.
func (q *Queue) Add(id int64) bool {
	q.mu.Lock()
	if q.waiting[id] {
		q.mu.Unlock()
		return true
	}
	q.waiting[id] = true
	q.mu.Unlock()
	select {
	case q.ids <- id:
		return true
	default:
		q.mu.Lock()
		delete(q.waiting, id)
		q.mu.Unlock()
		return false
	}
}

// Work calls fn for each queued id, one at a time, until ctx ends.
func (q *Queue) Work(ctx context.Context, fn func(ctx context.Context, id int64)) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-q.ids:
			q.mu.Lock()
			delete(q.waiting, id)
			q.mu.Unlock()
			fn(ctx, id)
		}
	}
}
