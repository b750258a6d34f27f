package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// viewDataCache keeps the expensive parts of a page — the timeline's
// curves and events, a page of samples — for a short time, and lets
// concurrent identical requests share one load. An incident link pasted in
// a busy channel is opened by many people at once; without this each of
// them costs the same queries. Live data may lag by at most liveTTL (the
// pull loop itself runs every 30 s); a snapshot never changes, so its
// entries live longer (and its key includes its creation time).
type viewDataCache struct {
	mu sync.Mutex
	m  map[string]viewDataEntry
	sf singleflight.Group
}

type viewDataEntry struct {
	v       any
	expires time.Time
}

const (
	viewDataLiveTTL     = 10 * time.Second
	viewDataSnapshotTTL = 10 * time.Minute
	viewDataMaxEntries  = 512
)

// get returns the value under key, loading it (once, however many callers
// ask at the same time) when it is missing or expired. load gets a context
// that outlives the first caller: the others wait on the same load.
func (c *viewDataCache) get(ctx context.Context, key string, ttl time.Duration, load func(ctx context.Context) (any, error)) (any, error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.m[key]; ok && now.Before(e.expires) {
		c.mu.Unlock()
		return e.v, nil
	}
	c.mu.Unlock()
	v, err, _ := c.sf.Do(key, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		v, err := load(lctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m == nil || len(c.m) >= viewDataMaxEntries {
			// Dropping everything is crude but bounded, and entries are
			// cheap to rebuild.
			c.m = map[string]viewDataEntry{}
		}
		c.m[key] = viewDataEntry{v: v, expires: time.Now().Add(ttl)}
		return v, nil
	})
	return v, err
}

// sourceKey names where an incident page reads from, for cache keys.
func (d *incidentData) sourceKey() (string, time.Duration) {
	if d.snap != nil {
		return fmt.Sprintf("snap:%d@%d", d.snap.IncidentID, d.snap.CreatedAt.UnixNano()), viewDataSnapshotTTL
	}
	return "live", viewDataLiveTTL
}
