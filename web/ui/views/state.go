package views

import (
	"fmt"
	"github.com/waterline-dev/waterline/web/request"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// State is everything a view shows that the user chose: the window, the
// filters, the selected concentration row, the sample tab, order and page.
// It lives in the URL (and only there), so back/forward and a pasted link
// reproduce the view exactly.
type State struct {
	Base     string    // path of the view: /incidents/5, /s/{token}, /explore
	From, To time.Time // zero: the view's default window
	Scope    correlate.Scope
	// Sample-only filters, set by concentration rows on dimensions curves
	// do not have.
	Entry, Status, Batch string
	Tab                  string // "slow" (default) or "baseline"
	Sort                 string // "total" (default), "time" or a stage name
	Asc                  bool   // default descending
	Page                 int    // 1-based; 0 = 1
	// Slowest shows the slowest slow requests only; by default the slow
	// tab, sorted by total, spreads them over the window and the replicas
	// (see Spread).
	Slowest bool
	// Live reads live data even when the incident has a frozen snapshot.
	Live bool
	// Default is the view's own scope (a scoped incident's, see
	// DefaultTo): it applies when the URL names no scope, and the URL
	// says scope=fleet when the user removed it. Not a parameter itself.
	Default correlate.Scope
	// Fleet: the URL said scope=fleet (no default scope).
	Fleet bool
}

// stateParams are the query parameters State reads, in URL order.
var stateParams = []string{"from", "to", "scope", "model", "version", "tenant", "replica", "node", "entry", "status", "batch_size", "tab", "sort", "dir", "pick", "page", "live"}

// ParseState reads a State from query parameters. Times are RFC 3339 or
// Unix seconds; bad values are errors naming the parameter, so a mangled
// link says what is wrong instead of showing something else.
func ParseState(base string, q url.Values) (State, error) {
	s := State{Base: base}
	var err error
	if s.From, err = parseTime(q.Get("from")); err != nil {
		return s, fmt.Errorf("from: %w", err)
	}
	if s.To, err = parseTime(q.Get("to")); err != nil {
		return s, fmt.Errorf("to: %w", err)
	}
	if !s.From.IsZero() && !s.To.IsZero() && !s.From.Before(s.To) {
		return s, fmt.Errorf("to: must be after from")
	}
	// Filters are labels, bounded as ingest bounds them: a longer one
	// matches nothing, and would only inflate the page, its links and its
	// cache key.
	for _, k := range []string{"model", "version", "tenant", "replica", "node", "entry", "status", "batch_size"} {
		if v := q.Get(k); len(v) > request.MaxLabelLen {
			return s, fmt.Errorf("%s: at most %d bytes, got %d", k, request.MaxLabelLen, len(v))
		}
	}
	s.Scope = correlate.Scope{Model: q.Get("model"), Version: q.Get("version"), Tenant: q.Get("tenant"),
		Replica: q.Get("replica"), Node: q.Get("node")}
	s.Entry, s.Status, s.Batch = q.Get("entry"), q.Get("status"), q.Get("batch_size")
	if s.Batch != "" {
		if _, _, ok := BatchRange(s.Batch); !ok {
			return s, fmt.Errorf("batch_size: want N or N-M, got %q", s.Batch)
		}
	}
	switch s.Tab = q.Get("tab"); s.Tab {
	case "", "slow", "baseline":
	default:
		return s, fmt.Errorf("tab: want slow or baseline, got %q", s.Tab)
	}
	if s.Tab == "slow" {
		s.Tab = ""
	}
	s.Sort = q.Get("sort")
	if s.Sort != "" && s.Sort != "total" && s.Sort != "time" {
		if _, ok := correlate.ParseStage(s.Sort); !ok {
			return s, fmt.Errorf("sort: want total, time or a stage name, got %q", s.Sort)
		}
	}
	if s.Sort == "total" {
		s.Sort = ""
	}
	switch q.Get("dir") {
	case "", "desc":
	case "asc":
		s.Asc = true
	default:
		return s, fmt.Errorf("dir: want asc or desc, got %q", q.Get("dir"))
	}
	switch q.Get("pick") {
	case "", "spread":
	case "slowest":
		s.Slowest = true
	default:
		return s, fmt.Errorf("pick: want spread or slowest, got %q", q.Get("pick"))
	}
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100000 {
			return s, fmt.Errorf("page: want a positive number, got %q", p)
		}
		if n > 1 {
			s.Page = n
		}
	}
	s.Live = q.Get("live") == "1"
	switch q.Get("scope") {
	case "":
	case "fleet":
		s.Fleet = true
	default:
		return s, fmt.Errorf("scope: want fleet, got %q", q.Get("scope"))
	}
	return s, nil
}

// DefaultTo makes sc the view's own scope: the scope shown when the URL
// names none (nor scope=fleet). A filter of the user's replaces it.
func (s State) DefaultTo(sc correlate.Scope) State {
	s.Default = sc
	if s.Scope.IsZero() && !s.Fleet {
		s.Scope = sc
	}
	return s
}

func parseTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e11 {
		return time.UnixMilli(int64(f * 1000)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time or Unix seconds, got %q", v)
}

// Spread reports whether the sample table spreads the slow requests over
// the window and the replicas: the slow tab's default order (total,
// descending) unless Slowest asks for the slowest only.
func (s State) Spread() bool {
	return s.DefaultOrder() && !s.Slowest
}

// DefaultOrder reports whether the sample table shows the slow tab in its
// default order (total, descending), where Slowest picks between spreading
// the slow requests and the slowest only.
func (s State) DefaultOrder() bool {
	return s.Tab == "" && s.Sort == "" && !s.Asc
}

// BatchRange parses a batch-size bucket as concentration rows name them:
// "2" or "5-8".
func BatchRange(b string) (lo, hi int, ok bool) {
	l, h, found := strings.Cut(b, "-")
	lo, err1 := strconv.Atoi(l)
	hi, err2 := lo, error(nil)
	if found {
		hi, err2 = strconv.Atoi(h)
	}
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// Query renders the state as query parameters; defaults are left out so
// equal views have equal URLs.
func (s State) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !s.From.IsZero() {
		set("from", s.From.UTC().Format(time.RFC3339))
	}
	if !s.To.IsZero() {
		set("to", s.To.UTC().Format(time.RFC3339))
	}
	switch {
	case !s.Default.IsZero() && s.Scope == s.Default: // the view's own: its clean URL
	case s.Scope.IsZero() && (s.Fleet || !s.Default.IsZero()):
		set("scope", "fleet") // the view's own scope removed
	default:
		set("model", s.Scope.Model)
		set("version", s.Scope.Version)
		set("tenant", s.Scope.Tenant)
		set("replica", s.Scope.Replica)
		set("node", s.Scope.Node)
	}
	set("entry", s.Entry)
	set("status", s.Status)
	set("batch_size", s.Batch)
	set("tab", s.Tab)
	set("sort", s.Sort)
	if s.Asc {
		set("dir", "asc")
	}
	if s.Slowest {
		set("pick", "slowest")
	}
	if s.Page > 1 {
		set("page", strconv.Itoa(s.Page))
	}
	if s.Live {
		set("live", "1")
	}
	return q
}

// URL is the state's link: Base plus its query, parameters in a fixed order.
func (s State) URL() string { return s.Path(s.Base) }

// Path is the state's query on another path (a fragment's URL).
func (s State) Path(path string) string {
	q := s.Query()
	if len(q) == 0 {
		return path
	}
	var b strings.Builder
	b.WriteString(path)
	sep := byte('?')
	for _, k := range stateParams {
		if v := q.Get(k); v != "" {
			b.WriteByte(sep)
			sep = '&'
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(v))
		}
	}
	return b.String()
}

// HasFilters reports whether any dimension filter is set.
func (s State) HasFilters() bool {
	return !s.Scope.IsZero() || s.Entry != "" || s.Status != "" || s.Batch != ""
}

// WithWindow returns the state over [from, to) on page 1.
func (s State) WithWindow(from, to time.Time) State {
	s.From, s.To, s.Page = from.UTC(), to.UTC(), 0
	return s
}

// WithoutWindow returns the state over the default window.
func (s State) WithoutWindow() State {
	s.From, s.To, s.Page = time.Time{}, time.Time{}, 0
	return s
}

// WithFilters replaces every dimension filter with dims (a concentration
// row or a cause's target), on page 1. Unknown dimensions are ignored.
//
// On a view with its own scope (DefaultTo) the filters narrow it, as the
// incident's share page does, unless the user removed it (scope=fleet).
func (s State) WithFilters(dims map[string]string) State {
	s.Scope, s.Entry, s.Status, s.Batch, s.Page = correlate.Scope{}, "", "", "", 0
	if !s.Fleet {
		s.Scope = s.Default
	}
	for k, v := range dims {
		s = s.withDim(k, v)
	}
	return s
}

// FilteredTo reports whether the view's filters are what WithFilters(dims)
// sets — the user's own choice on top of the view's own scope — and not
// just that scope: a concentration row or a cause's target is selected
// only when it is what the user filtered to. Comparing dims with Dims()
// alone never matched on a scoped view, whose filters add its scope.
func (s State) FilteredTo(dims map[string]string) bool {
	cur := DimsKey(s.Dims())
	return cur == DimsKey(s.WithFilters(dims).Dims()) && cur != DimsKey(s.WithFilters(nil).Dims())
}

// Without clears one dimension filter, on page 1.
func (s State) Without(dim string) State { return s.withDim(dim, "") }

func (s State) withDim(k, v string) State {
	switch k {
	case "model":
		s.Scope.Model = v
	case "version":
		s.Scope.Version = v
	case "tenant":
		s.Scope.Tenant = v
	case "replica":
		s.Scope.Replica = v
	case "node":
		s.Scope.Node = v
	case "entry":
		s.Entry = v
	case "status":
		s.Status = v
	case "batch_size":
		s.Batch = v
	}
	s.Page = 0
	return s
}

// Dims returns the dimension filters as a map (what WithFilters takes).
func (s State) Dims() map[string]string {
	m := map[string]string{}
	for _, kv := range s.FilterList() {
		m[kv.K] = kv.V
	}
	return m
}

// FilterList returns the set dimension filters in a fixed order.
func (s State) FilterList() []KV {
	var out []KV
	for _, kv := range []KV{{"model", s.Scope.Model}, {"version", s.Scope.Version}, {"tenant", s.Scope.Tenant},
		{"replica", s.Scope.Replica}, {"node", s.Scope.Node}, {"entry", s.Entry}, {"status", s.Status}, {"batch_size", s.Batch}} {
		if kv.V != "" {
			out = append(out, kv)
		}
	}
	return out
}

// FilterDims are the dimensions State can filter on.
var FilterDims = map[string]bool{"model": true, "version": true, "tenant": true, "replica": true, "node": true,
	"entry": true, "status": true, "batch_size": true}

// DimsKey renders dims as "k=v · k=v" in key order: a concentration row's
// name and identity.
func DimsKey(dims map[string]string) string {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + dims[k]
	}
	return strings.Join(parts, " · ")
}
