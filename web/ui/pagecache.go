package ui

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/web/ui/views"
)

// pageCache keeps rendered incident pages (and their htmx fragments),
// compressed once, for the moment a link pasted in a busy channel is
// opened by a chat unfurler and dozens of people at the same time: one
// render serves them all, a gzip or brotli encoding is made once, and a
// browser that has the page gets 304 for its strong ETag. Share pages are
// shared by everyone holding the link; signed-in pages are kept per
// session (incidentPageKey).
//
// The key holds everything a page depends on: the link (its token is in
// every URL on the page) or the session, the htmx target, the view's
// query, the incident's updated_at (any change: window, status), its
// newest analysis version and status, its snapshot time (and, signed in,
// its share link). Live data has no
// version, so a page over live data lives pageLiveTTL, the lag the
// other page caches allow too; a frozen incident's page reads only its
// snapshot and lives longer. Changes made here also drop the incident's
// entries at once (forget).
type pageCache struct {
	mu    sync.Mutex
	m     map[string]*cachedPage
	bytes int // of every entry's page and encodings
	sf    singleflight.Group
}

// cachedPage is one cached answer: the page and its encodings.
type cachedPage struct {
	incident int64
	header   http.Header // as rendered (Content-Type and whatever else the page set)
	raw, gz  []byte
	br       []byte // nil when brotli is not built in
	etag     string // hex digest of raw; encodings add a suffix
	expires  time.Time
}

const (
	pageLiveTTL   = 10 * time.Second
	pageFrozenTTL = time.Minute
	// pageCacheBytes bounds each cache: a demo incident page is ~165 KB
	// raw, ~31 KB gzipped and ~17 KB in brotli, so ~150 pages fit.
	pageCacheBytes = 32 << 20
)

func (pg *cachedPage) size() int { return len(pg.raw) + len(pg.gz) + len(pg.br) }

// get returns the page under key, rendering it once however many ask.
func (pc *pageCache) get(ctx context.Context, key string, render func() (*cachedPage, error)) (*cachedPage, error) {
	now := time.Now()
	pc.mu.Lock()
	if pg, ok := pc.m[key]; ok && now.Before(pg.expires) {
		pc.mu.Unlock()
		return pg, nil
	}
	pc.mu.Unlock()
	v, err, _ := pc.sf.Do(key, func() (any, error) {
		pg, err := render()
		if err != nil {
			return nil, err
		}
		if pg.size() > pageCacheBytes/16 {
			return pg, nil // served, not kept: one page may not crowd out the rest
		}
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if pc.m == nil {
			pc.m = map[string]*cachedPage{}
		}
		pc.dropLocked(key)
		if pc.bytes+pg.size() > pageCacheBytes {
			pc.evictLocked(time.Now())
		}
		pc.m[key] = pg
		pc.bytes += pg.size()
		return pg, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*cachedPage), nil
}

// evictLocked drops expired entries, then random ones (map order) until
// a quarter of the budget is free: bounded, and cheap to rebuild.
func (pc *pageCache) evictLocked(now time.Time) {
	for k, pg := range pc.m {
		if !now.Before(pg.expires) {
			pc.dropLocked(k)
		}
	}
	for k := range pc.m {
		if pc.bytes <= pageCacheBytes*3/4 {
			break
		}
		pc.dropLocked(k)
	}
}

func (pc *pageCache) dropLocked(key string) {
	if pg, ok := pc.m[key]; ok {
		pc.bytes -= pg.size()
		delete(pc.m, key)
	}
}

// forget drops every cached page of an incident.
func (pc *pageCache) forget(id int64) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for k, pg := range pc.m {
		if pg.incident == id {
			pc.dropLocked(k)
		}
	}
}

// sharePageKey names one cached answer.
func sharePageKey(ss store.PageState, base, target string, st views.State) (string, time.Duration) {
	snap, ttl := "live", pageLiveTTL
	if ss.SnapshotAt != nil {
		snap, ttl = strconv.FormatInt(ss.SnapshotAt.UnixNano(), 10), pageFrozenTTL
	}
	return fmt.Sprintf("share|%q|%q|%q|%d|%d|%q|%s", base, target, st.URL(), ss.UpdatedAt.UnixNano(), ss.AnalysisVersion,
		ss.AnalysisStatus, snap), ttl
}

// incidentPageKey names a signed-in incident page. The page carries the
// user's name and CSRF token and offers what their scope allows, so it is
// kept per session; it also shows whether the incident has a share link.
// Every string is quoted: no two sessions can make the same key.
func incidentPageKey(ps store.PageState, u user, target string, st views.State) (string, time.Duration) {
	snap, ttl := "live", pageLiveTTL
	if ps.SnapshotAt != nil && !st.Live {
		snap, ttl = strconv.FormatInt(ps.SnapshotAt.UnixNano(), 10), pageFrozenTTL
	}
	shared := "-"
	if ps.SharedAt != nil {
		shared = strconv.FormatInt(ps.SharedAt.UnixNano(), 10)
	}
	return fmt.Sprintf("incident|%d|%q|%q|%q|%q|%q|%d|%d|%q|%s|%s|%d", ps.IncidentID, u.Name, u.Scope, u.CSRF, target, st.URL(),
		ps.UpdatedAt.UnixNano(), ps.AnalysisVersion, ps.AnalysisStatus, snap, shared, ps.WebhookShares), ttl
}

// showIncidentCached answers GET /incidents/{id} (and its fragments) from
// the page cache: one query says whether the cached page is still what the
// incident looks like; only a miss renders.
func (p *Pages) showIncidentCached(c echo.Context, id int64) error {
	ctx := c.Request().Context()
	ps, err := p.store.IncidentPageState(ctx, id)
	if err != nil {
		return err
	}
	base := incidentPath(id)
	st, err := views.ParseState(base, c.QueryParams())
	if err != nil {
		return request.BadInput("", "%v", err)
	}
	u, _ := userOf(c)
	key, ttl := incidentPageKey(ps, u, pageVariant(c.Request()), st)
	pg, err := p.pages.get(ctx, key, func() (*cachedPage, error) {
		return renderCached(c, id, ttl, func(c echo.Context) error {
			return p.incidentPage(c, id, base, false)
		})
	})
	if err != nil {
		return err
	}
	return serveCached(c, pg)
}

// capturedResponse records what a handler writes.
type capturedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *capturedResponse) Header() http.Header { return r.header }
func (r *capturedResponse) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *capturedResponse) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// renderCached runs h with its output captured and, when it answers 200,
// makes a cache entry of it (compressed once). Anything else is an error
// for the caller to answer as usual.
func renderCached(c echo.Context, incidentID int64, ttl time.Duration, h func(echo.Context) error) (*cachedPage, error) {
	orig := c.Response()
	rec := &capturedResponse{header: http.Header{}}
	c.SetResponse(echo.NewResponse(rec, c.Echo()))
	err := h(c)
	c.SetResponse(orig)
	if err != nil {
		return nil, err
	}
	if rec.status != http.StatusOK {
		return nil, fmt.Errorf("share page rendered status %d", rec.status)
	}
	raw := bytes.Clone(rec.body.Bytes())
	sum := sha256.Sum256(raw)
	pg := &cachedPage{incident: incidentID, header: rec.header, raw: raw, etag: hex.EncodeToString(sum[:16]),
		expires: time.Now().Add(ttl)}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.DefaultCompression) // best would save ~3 % for 2-3× the time of a miss
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	pg.gz = gz.Bytes()
	pg.br = brotliCompress(raw)
	return pg, nil
}

// serveCached answers with a cached page in the best encoding the client
// accepts, or 304 when it already has that representation.
func serveCached(c echo.Context, pg *cachedPage) error {
	h := c.Response().Header()
	for k, v := range pg.header {
		h[k] = slices.Clone(v)
	}
	h.Del("Content-Length")
	h.Set("Vary", "HX-Request, HX-Target, Sec-Fetch-Mode, Accept-Encoding")
	// A capability URL: browsers may keep it but must ask again (a revoked
	// link must stop working), shared caches must not keep it.
	h.Set("Cache-Control", "private, no-cache")
	body, etag, enc := pg.raw, pg.etag, ""
	switch acceptedEncoding(c.Request().Header.Get("Accept-Encoding"), pg.br != nil) {
	case "br":
		body, etag, enc = pg.br, pg.etag+"-br", "br"
	case "gzip":
		body, etag, enc = pg.gz, pg.etag+"-gz", "gzip"
	}
	etag = `"` + etag + `"`
	h.Set("ETag", etag)
	if enc != "" {
		h.Set("Content-Encoding", enc)
	}
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return c.Blob(http.StatusOK, h.Get("Content-Type"), body)
}

// acceptedEncoding picks br (when available), then gzip, from an
// Accept-Encoding header; "" for identity. q=0 refuses an encoding.
func acceptedEncoding(header string, haveBrotli bool) string {
	q := map[string]float64{}
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		w := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				w = f
			}
		}
		q[strings.ToLower(strings.TrimSpace(name))] = w
	}
	star, hasStar := q["*"]
	accepts := func(enc string) bool {
		if w, ok := q[enc]; ok {
			return w > 0
		}
		return hasStar && star > 0
	}
	switch {
	case haveBrotli && accepts("br"):
		return "br"
	case accepts("gzip"):
		return "gzip"
	}
	return ""
}

// etagMatches is If-None-Match's comparison: "*" or any listed tag equal
// to etag (W/ prefixes compare weakly, which is what If-None-Match asks).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
