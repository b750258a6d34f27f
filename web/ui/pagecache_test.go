package ui

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestPageCacheBounded: the cache stays within its byte budget however
// many pages are put in it, and keeps serving what it holds.
func TestPageCacheBounded(t *testing.T) {
	var pc pageCache
	page := make([]byte, 1<<20) // 1 MiB per entry
	for i := range 200 {
		key := fmt.Sprintf("k%d", i)
		pg, err := pc.get(context.Background(), key, func() (*cachedPage, error) {
			return &cachedPage{incident: int64(i % 3), raw: page, expires: time.Now().Add(time.Minute)}, nil
		})
		if err != nil || pg == nil {
			t.Fatal(err)
		}
		if pc.bytes > pageCacheBytes {
			t.Fatalf("after %d pages the cache holds %d bytes, over %d", i+1, pc.bytes, pageCacheBytes)
		}
	}
	if len(pc.m) == 0 {
		t.Fatal("the cache kept nothing")
	}
	n := 0
	for _, pg := range pc.m {
		n += pg.size()
	}
	if n != pc.bytes {
		t.Fatalf("byte count %d, entries hold %d", pc.bytes, n)
	}
	pc.forget(1)
	for _, pg := range pc.m {
		if pg.incident == 1 {
			t.Fatal("forget left a page of incident 1")
		}
	}
	// A hit does not render.
	for k := range pc.m {
		if _, err := pc.get(context.Background(), k, func() (*cachedPage, error) {
			t.Fatal("rendered a cached page")
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		break
	}
}

// TestAcceptedEncoding: br when allowed, then gzip; q=0 refuses; * counts.
func TestAcceptedEncoding(t *testing.T) {
	for _, c := range []struct {
		header string
		br     bool
		want   string
	}{
		{"", true, ""},
		{"gzip, deflate, br", true, "br"},
		{"gzip, deflate, br", false, "gzip"},
		{"br;q=0, gzip", true, "gzip"},
		{"gzip;q=0", true, ""},
		{"*", true, "br"},
		{"*;q=0", true, ""},
		{"identity", true, ""},
		{"GZIP", false, "gzip"},
	} {
		if got := acceptedEncoding(c.header, c.br); got != c.want {
			t.Errorf("%q (brotli %v): %q, want %q", c.header, c.br, got, c.want)
		}
	}
}

// TestPageCacheSkipsHugePages: a page over a sixteenth of the budget is
// served but not kept (one bigger than the whole budget was kept, over
// it, after evicting); one under it is kept.
func TestPageCacheSkipsHugePages(t *testing.T) {
	var pc pageCache
	if _, err := pc.get(context.Background(), "fits", func() (*cachedPage, error) {
		return &cachedPage{raw: make([]byte, pageCacheBytes/16), expires: time.Now().Add(time.Minute)}, nil
	}); err != nil || len(pc.m) != 1 {
		t.Fatalf("a page of 1/16 of the budget was not kept (%v)", err)
	}
	pc = pageCache{}
	huge := make([]byte, pageCacheBytes/16+1)
	pg, err := pc.get(context.Background(), "huge", func() (*cachedPage, error) {
		return &cachedPage{raw: huge, expires: time.Now().Add(time.Minute)}, nil
	})
	if err != nil || pg == nil || len(pg.raw) != len(huge) {
		t.Fatalf("huge page not served: %v", err)
	}
	if pc.bytes > pageCacheBytes || len(pc.m) != 0 {
		t.Fatalf("the cache kept a page of %d bytes (holds %d, budget %d)", len(huge), pc.bytes, pageCacheBytes)
	}
}
