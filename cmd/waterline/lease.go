package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/waterline-dev/waterline/store"
)

// detectLease names the lease of the background detector: among serve
// replicas on one database only its holder judges the curves, so two
// detectors never open two incidents for one spike.
const detectLease = "detect"

// runLeased runs job while this replica holds the lease name, until ctx
// ends. It campaigns every retry; while it holds the lease it checks it
// every retry and, when the lease is lost (its connection died, or the
// check went unanswered for a retry), cancels job, waits for it and
// campaigns again. A replica that dies loses its
// lease with its connection, and another takes over on its next try.
func runLeased(ctx context.Context, st *store.Store, name string, retry time.Duration, log *slog.Logger, job func(context.Context)) {
	for {
		lease, ok, err := st.TryLease(ctx, name)
		if err != nil && ctx.Err() == nil {
			log.Warn("cannot campaign for a lease", "lease", name, "err", err)
		}
		if ok {
			log.Info("this replica holds the lease", "lease", name)
			jctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { job(jctx); close(done) }()
			for sleepCtx(ctx, retry) {
				// A check that gets no answer in one interval is a lost
				// lease: a holder cut off from Postgres would otherwise
				// wait for the kernel to give up on the socket, running
				// its job beside the replica that took the lease over.
				cctx, cancelCheck := context.WithTimeout(ctx, retry)
				err := lease.Check(cctx)
				cancelCheck()
				if err != nil {
					if ctx.Err() == nil {
						log.Warn("lost the lease; stopping until re-elected", "lease", name, "err", err)
					}
					break
				}
			}
			cancel()
			<-done
			lease.Release()
		}
		if !sleepCtx(ctx, retry) {
			return
		}
	}
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
