package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// viewDataCache keeps the expensive parts of a page — the timeline's
// curves and events, a page of samples — for a short time, and lets
// concurrent identical requests share one load. An incident link pasted in
// a busy channel is opened by many people at once; without this each of
// them costs the same queries. Live data may lag by at most liveTTL (the
// pull loop itself runs every 30 s); a snapshot never changes, so its
// entries live longer (and its key includes its creation time).
type viewDataCache struct {
	mu    sync.Mutex
	m     map[string]viewDataEntry
	bytes int // approxBytes of the entries in m
	sf    singleflight.Group
}

type viewDataEntry struct {
	v       any
	expires time.Time
	bytes   int
}

// The cache is bounded in entries and in bytes (approximately): one
// heatmap's samples can be 50 MB, and keys vary with the window asked
// for. A value over a quarter of the byte bound is not kept.
const (
	viewDataLiveTTL     = 10 * time.Second
	viewDataSnapshotTTL = 10 * time.Minute
	viewDataMaxEntries  = 512
	viewDataMaxBytes    = 64 << 20
)

// sampleBytes is about what one cached sample holds (strings shared).
const sampleBytes = 320

// approxBytes estimates what a cached value holds.
func approxBytes(v any) int {
	switch x := v.(type) {
	case []correlate.Sample:
		return len(x) * sampleBytes
	case store.SamplePage:
		return len(x.Samples) * sampleBytes
	case timelineResult:
		n := len(x.tv.Events) * 512
		for _, cs := range [][]correlate.Curve{x.tv.Curves, x.curves} {
			for _, c := range cs {
				n += 256 + len(c.Points)*16
			}
		}
		return n
	}
	return 1024
}

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
		n := approxBytes(v)
		if n > viewDataMaxBytes/4 {
			return v, nil // shared with the callers waiting now, not kept
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if old, ok := c.m[key]; ok {
			c.bytes -= old.bytes
		}
		if c.m == nil || len(c.m) >= viewDataMaxEntries || c.bytes+n > viewDataMaxBytes {
			// Dropping everything is crude but bounded, and entries are
			// cheap to rebuild.
			c.m, c.bytes = map[string]viewDataEntry{}, 0
		}
		c.m[key] = viewDataEntry{v: v, expires: time.Now().Add(ttl), bytes: n}
		c.bytes += n
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
