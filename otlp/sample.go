package otlp

import (
	"cmp"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// build turns a trace into one sample. The entry span gives the time and
// the total; every millisecond of it goes to exactly one stage: a span's
// self time (its duration less its children's, less what its attributes
// and events attribute to stages of their own) goes to the span's stage —
// its rule's, else its parent's, the entry span's being gateway. expired
// says MaxWait passed: without a configured entry span, the topmost span
// present then stands in for a root that never came. now is the caller's
// clock, against which the sample's time is checked (MaxAge, MaxFuture).
func (a *Assembler) build(id [16]byte, sp []span, expired bool, now time.Time) (correlate.Sample, Drop, bool) {
	// Most traces have a handful of spans: find parents by a linear scan
	// there, by a map past that.
	var index map[[8]byte]int
	if len(sp) > 16 {
		index = make(map[[8]byte]int, len(sp))
		for i := range sp {
			index[sp[i].id] = i
		}
	}
	parentOf := func(i int) (int, bool) {
		p := sp[i].parent
		if index != nil {
			j, ok := index[p]
			return j, ok
		}
		for j := range sp {
			if sp[j].id == p {
				return j, true
			}
		}
		return 0, false
	}
	// Per span: its parent's place (-1 = not here) and its children, as
	// runs of kids (kidAt[i]:kidAt[i+1]).
	// The walk's index slices (parent, kidAt, kids, fill, stack, order)
	// and flags share one array each: on the stack for traces of up to 16
	// spans (nearly all), one allocation each past that.
	n := len(sp)
	var intBuf [6*16 + 1]int
	var flagBuf [3 * 16]int8
	ints, flags := intBuf[:], flagBuf[:] // flags: stage, seen, serverish
	if n > 16 {
		ints, flags = make([]int, 6*n+1), make([]int8, 3*n)
	}
	ints, flags = ints[:6*n+1], flags[:3*n]
	parent, kidAt := ints[:n:n], ints[n:2*n+1:2*n+1]
	stage, seen, serverish := flags[:n:n], flags[n:2*n:2*n], flags[2*n:]
	tops := 0 // spans whose parent is not here: one, nearly always
	for i := range sp {
		parent[i] = -1
		if p, ok := parentOf(i); ok && sp[i].parent != [8]byte{} && p != i {
			parent[i] = p
			kidAt[p+1]++
		} else {
			tops++
		}
	}
	for i := range sp {
		kidAt[i+1] += kidAt[i]
	}
	kids := ints[2*n+1 : 2*n+1+kidAt[n]]
	fill := ints[3*n+1 : 4*n+1]
	copy(fill, kidAt[:n])
	for i := range sp {
		if p := parent[i]; p >= 0 {
			kids[fill[p]] = i
			fill[p]++
		}
	}
	children := func(i int) []int { return kids[kidAt[i]:kidAt[i+1]] }
	// The entry: the earliest configured span, else the topmost root or
	// span under a remote parent that is not here (a model server's span
	// under the gateway's call, or under a sidecar's span, has a remote
	// parent too).
	entry := -1
	for i := range sp {
		if a.isEntry(&sp[i]) && (a.cfg.EntrySpan != "" || parent[i] < 0) && (entry < 0 || a.above(&sp[i], &sp[entry])) {
			entry = i
		}
	}
	// Without a candidate before MaxWait: a span under a remote parent
	// (the model server's, its SDK setting the flags) made the trace wait,
	// and its parent came — a proxy's span that sets no flags (Envoy,
	// Kong, NGINX) under a caller that propagated its context but exports
	// elsewhere. That span stands in for the root now, as at MaxWait,
	// unless a topmost span's flags say its root is local, still running.
	if entry < 0 && !expired && a.cfg.EntrySpan == "" {
		expired = true
		for i := range sp {
			if _, ok := parentOf(i); !ok && sp[i].parentLocal {
				expired = false
				break
			}
		}
	}
	if entry < 0 && expired && a.cfg.EntrySpan == "" {
		// The longest span whose parent is not here (the caller's span
		// was not exported to Waterline).
		for i := range sp {
			if _, ok := parentOf(i); !ok && (entry < 0 || sp[i].end-sp[i].start > sp[entry].end-sp[entry].start) {
				entry = i
			}
		}
	}
	if entry < 0 {
		return correlate.Sample{}, DropNoEntry, false
	}
	e := &sp[entry]
	start := time.Unix(0, e.start).UTC()
	if (a.opt.MaxAge > 0 && start.Before(now.Add(-a.opt.MaxAge))) || start.After(now.Add(a.opt.MaxFuture)) ||
		(a.opt.Oldest != nil && a.opt.Oldest().After(start)) {
		return correlate.Sample{}, DropOutWindow, false
	}

	if tops > 1 {
		// Subtrees whose parent is not here (a sidecar's span exported
		// elsewhere, a span lost) are put in the entry's, and the children
		// counted again.
		a.attachOrphans(sp, entry, parent, kidAt, kids, fill, ints[5*n+1:5*n+1:6*n+1], seen)
		clear(kidAt)
		for i := range sp {
			if p := parent[i]; p >= 0 {
				kidAt[p+1]++
			}
		}
		for i := range sp {
			kidAt[i+1] += kidAt[i]
		}
		kids = ints[2*n+1 : 2*n+1+kidAt[n]]
		copy(fill, kidAt[:n])
		for i := range sp {
			if p := parent[i]; p >= 0 {
				kids[fill[p]] = i
				fill[p]++
			}
		}
	}

	// Walk the entry's subtree parents first, giving each span its stage.
	// Each span is pushed once at most (one parent each), so stack and
	// order fit in n.
	order := ints[4*n+1 : 4*n+1 : 5*n+1]
	stack := append(ints[5*n+1:5*n+1:6*n+1], entry)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] != 0 { // a cycle in bad data
			continue
		}
		seen[i] = 1
		order = append(order, i)
		own := sp[i].stageInner
		if len(children(i)) == 0 {
			own = sp[i].stageLeaf
		}
		switch {
		case own >= 0:
			stage[i] = own
		case i == entry:
			stage[i] = int8(correlate.StageGateway)
		default:
			stage[i] = stage[parent[i]]
		}
		// Children in reverse start order, so the walk visits them in order.
		kids := children(i)
		slices.SortFunc(kids, func(x, y int) int { return cmp.Compare(sp[y].start, sp[x].start) })
		stack = append(stack, kids...)
	}

	var ms [correlate.NumStages]float64
	var reported [correlate.NumStages]bool
	// Time per dependency: a trace calls a few, so a short list.
	type depTime struct {
		name string
		ns   float64
	}
	var depBuf [4]depTime
	deps := depBuf[:0]
	// Every nanosecond of the entry span goes to one stage once: each span
	// counts only within its parent's (clipped) window — a child outliving
	// its parent adds nothing — and children that overlap (parallel calls)
	// share the time they cover, each weighted by covered / the sum of
	// their clipped durations, their own children in turn. Summed, the
	// stages are the entry span's duration. Clocks differ between hosts:
	// a span of another process (resource) than its parent's that does
	// not fit in it is first moved into it, centred, and its process's
	// spans under it with it (Jaeger's clock skew adjustment; a span
	// longer than its parent stays, clipped).
	var loBuf, hiBuf, skewBuf [16]int64
	var wBuf, srvBuf [16]float64
	lo, hi, skew, w, srv := loBuf[:], hiBuf[:], skewBuf[:], wBuf[:], srvBuf[:] // srv: ns each span gives server stages
	if n > 16 {
		lo, hi, skew, w, srv = make([]int64, n), make([]int64, n), make([]int64, n), make([]float64, n), make([]float64, n)
	}
	lo[entry], hi[entry], w[entry] = e.start, max(e.end, e.start), 1
	for _, i := range order {
		s := &sp[i]
		var sum float64
		for _, k := range children(i) {
			skew[k] = skew[i]
			if sp[k].res != s.res {
				skew[k] = skewInto(s.start+skew[i], s.end+skew[i], sp[k].start, sp[k].end)
			}
			lo[k], hi[k] = max(sp[k].start+skew[k], lo[i]), min(sp[k].end+skew[k], hi[i])
			hi[k] = max(hi[k], lo[k])
			sum += float64(hi[k] - lo[k])
		}
		cov := covered(children(i), lo, hi)
		for _, k := range children(i) {
			if w[k] = 0; sum > 0 {
				w[k] = w[i] * cov / sum
			}
		}
		self := (float64(hi[i]-lo[i]) - cov) * w[i]
		for _, x := range a.extras(s, children(i), sp) {
			take := math.Min(x.ms*1e6*w[i], math.Max(self, 0))
			self -= take
			ms[x.stage] += take / 1e6
			reported[x.stage] = true
			if isServerStage(x.stage) {
				serverish[i], srv[i] = 1, srv[i]+take
			}
		}
		st := correlate.Stage(stage[i])
		ms[st] += math.Max(self, 0) / 1e6
		reported[st] = true
		if isServerStage(st) {
			serverish[i], srv[i] = 1, srv[i]+math.Max(self, 0)
		}
		if st == correlate.StageDownstream && s.dims[dimDependency] != "" {
			name, k := s.dims[dimDependency], 0
			for k < len(deps) && deps[k].name != name {
				k++
			}
			if k == len(deps) {
				deps = append(deps, depTime{name: name})
			}
			deps[k].ns += math.Max(self, 0)
		}
	}

	// Dimensions. The model server is the span that gave the server stages
	// most time among those naming the model (else among all): a gateway's
	// own queue span (rate limiting) is not it. It names the model, and its
	// own dimensions (version, replica, node, batch size) come from it,
	// else from the spans of its resource (its process) — the server
	// stages' first —, never from another's: a model server whose resource
	// names no version or pod has none, not the gateway's. Without server
	// stages, and for where the request came in (entry, tenant), the entry
	// span first, then any span; the status is the entry span's.
	srvAt := -1
	for _, i := range order {
		if serverish[i] == 0 {
			continue
		}
		if srvAt < 0 {
			srvAt = i
			continue
		}
		named, best := sp[i].dims[dimModel] != "", sp[srvAt].dims[dimModel] != ""
		if (named && !best) || (named == best && srv[i] > srv[srvAt]) {
			srvAt = i
		}
	}
	// The model the request was addressed to is the topmost span naming a
	// model above the model server's, in its process: Triton's ensemble
	// (or BLS model) above its steps, each of which names its own
	// (preprocessing, tensorrt_llm, postprocessing) — the sample was
	// stored under a step, not the model whose latency the incident is on.
	calledAt := srvAt
	for i, n := srvAt, 0; i >= 0 && n < len(sp); n++ {
		p, ok := parentOf(i)
		if !ok || p == i || sp[p].res != sp[srvAt].res {
			break
		}
		if sp[p].dims[dimModel] != "" {
			calledAt = p
		}
		i = p
	}
	dim := func(k int) string {
		if (k == dimModel || k == dimVersion) && calledAt != srvAt {
			if v := sp[calledAt].dims[k]; v != "" {
				return v
			}
		}
		if serverDim[k] && srvAt >= 0 {
			if v := sp[srvAt].dims[k]; v != "" {
				return v
			}
			if k != dimModel {
				res, best := sp[srvAt].res, -1
				for _, i := range order {
					if sp[i].res == res && sp[i].dims[k] != "" && (best < 0 || srv[i] > srv[best]) {
						best = i
					}
				}
				if best >= 0 {
					return sp[best].dims[k]
				}
				return ""
			}
		}
		if v := e.dims[k]; v != "" {
			return v
		}
		for _, i := range order {
			if v := sp[i].dims[k]; v != "" {
				return v
			}
		}
		return ""
	}
	out := correlate.Sample{
		RequestID: hexID(id), Time: start,
		Model: dim(dimModel), Version: dim(dimVersion), Tenant: dim(dimTenant), Replica: dim(dimReplica),
		Node: dim(dimNode), Entry: dim(dimEntry), Status: status(e, e.dims[dimStatusCode]),
		TotalMs: float64(e.end-e.start) / 1e6, SampleRate: 1,
	}
	if out.Node == out.Replica {
		// host.name in a pod is the pod's hostname, its name: not a node
		// (k8s.node.name names it, where the k8sattributes processor or
		// the downward API sets it). Taken for one, every pod was a node
		// of its own and a node's trouble looked like a replica's.
		out.Node = ""
	}
	if out.Model == "" && srvAt >= 0 {
		// No span names the model: the model server's process does, by its
		// service.name (unless it is an SDK's "unknown_service…"). A trace
		// without a model server (a gateway's health check) has none.
		if v := sp[srvAt].dims[dimService]; !strings.HasPrefix(v, "unknown_service") {
			out.Model = v
		}
	}
	if out.Model == "" {
		return correlate.Sample{}, DropNoModel, false
	}
	if out.TotalMs > correlate.MaxLatencyMs {
		return correlate.Sample{}, DropImplausible, false
	}
	if alias, ok := a.cfg.ModelAliases[out.Model]; ok {
		out.Model = alias
	}
	// (An empty value is skipped: ParseFloat's error for it allocates.)
	if v := dim(dimBatchSize); v != "" {
		if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 1 && n <= 1<<20 {
			out.BatchSize = int(n)
		}
	}
	if v := dim(dimSampleRate); v != "" {
		if r, err := strconv.ParseFloat(v, 64); err == nil && r >= 1 && r <= correlate.MaxSampleRate {
			out.SampleRate = r
		}
	}
	for i := range out.StagesMs {
		out.StagesMs[i] = math.NaN()
		if reported[i] {
			out.StagesMs[i] = math.Round(ms[i]*1000) / 1000
			if out.StagesMs[i] > correlate.MaxLatencyMs {
				return correlate.Sample{}, DropImplausible, false
			}
		}
	}
	best := 0.0
	for _, d := range deps {
		if d.ns > best || (d.ns == best && d.name < out.Dependency) {
			out.Dependency, best = d.name, d.ns
		}
	}
	// Token counts: the model server's, else those of the first span (in
	// the walk's order) that has them — a gateway that reads the answer's
	// usage, an LLM client span.
	var tokens [2]int32
	if srvAt >= 0 {
		tokens = sp[srvAt].tokens
	}
	for _, i := range order {
		for k := range tokens {
			if tokens[k] == 0 {
				tokens[k] = sp[i].tokens[k]
			}
		}
	}
	out.InputTokens, out.OutputTokens = int(tokens[0]), int(tokens[1])
	return out, 0, true
}

// above reports whether s is a better entry than e, both entry
// candidates: with an entry_span, the earlier; else a root before a span
// under a remote parent (the model server's, under a sidecar's span, may
// start first by its clock), then the longer — a caller's span lasts at
// least as long as what it calls, whatever the clocks say —, then the
// earlier.
func (a *Assembler) above(s, e *span) bool {
	if a.cfg.EntrySpan == "" {
		if r := s.parent == [8]byte{}; r != (e.parent == [8]byte{}) {
			return r
		}
		if d, de := s.end-s.start, e.end-e.start; d != de {
			return d > de
		}
	}
	return s.start < e.start
}

// attachOrphans gives each subtree whose top's parent is not here — other
// than the one holding the entry — a parent in the entry's subtree (in
// parent; kidAt and kids are the children before): the span the call most
// likely came through. Longest first (a subtree may go under an earlier
// one), each under, by preference: a client span that holds it and has
// no child of another process in the trace (the call whose receiving side
// is missing); else the deepest span holding it; else one of another
// process that overlaps it and is as long (a clock off: the build moves it
// in, as any such child); else the entry span if it overlaps (clipped to
// it). Depth breaks ties within a rank, then the tighter window. A subtree
// outside the entry's window is no part of the request and stays out of
// the walk. depth, stack and mark are scratch of len(sp) (mark: 1 = in
// the entry's subtree, 2 = and given an orphan); mark is cleared after.
func (a *Assembler) attachOrphans(sp []span, entry int, parent, kidAt, kids, depth, stack []int, mark []int8) {
	children := func(i int) []int { return kids[kidAt[i]:kidAt[i+1]] }
	// walk marks the subtree under i, at depth d.
	walk := func(i, d int) {
		depth[i] = d
		stack = append(stack[:0], i)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if mark[i] != 0 { // a cycle in bad data
				continue
			}
			mark[i] = 1
			for _, k := range children(i) {
				depth[k] = depth[i] + 1
				stack = append(stack, k)
			}
		}
	}
	top := entry // the top of the entry's subtree (an entry_span may have a parent)
	for range sp {
		if parent[top] < 0 {
			break
		}
		top = parent[top]
	}
	walk(entry, 0)
	var orphans []int
	for i := range sp {
		if parent[i] < 0 && i != top && mark[i] == 0 {
			orphans = append(orphans, i)
		}
	}
	slices.SortFunc(orphans, func(x, y int) int {
		return cmp.Or(cmp.Compare(sp[y].end-sp[y].start, sp[x].end-sp[x].start), cmp.Compare(sp[x].start, sp[y].start))
	})
	for _, o := range orphans {
		os := &sp[o]
		best, bestRank := -1, -1
		for c := range sp {
			if mark[c] == 0 {
				continue
			}
			cs := &sp[c]
			over := min(cs.end, os.end) - max(cs.start, os.start)
			holds := os.start >= cs.start && os.end <= cs.end
			skewed := !holds && over > 0 && cs.res != os.res && cs.end-cs.start >= os.end-os.start
			rank := -1
			switch {
			case cs.client && mark[c] == 1 && (holds || skewed) && !calledInTrace(sp, c, children(c)):
				rank = 3
			case holds:
				rank = 2
			case skewed:
				rank = 1
			case c == entry && over > 0:
				rank = 0
			}
			if rank < 0 {
				continue
			}
			if best < 0 || rank > bestRank || (rank == bestRank && (depth[c] > depth[best] ||
				(depth[c] == depth[best] && cs.end-cs.start < sp[best].end-sp[best].start))) {
				best, bestRank = c, rank
			}
		}
		if best < 0 {
			continue
		}
		parent[o] = best
		walk(o, depth[best]+1)
		mark[best] = 2
	}
	clear(mark)
}

// calledInTrace reports whether client span c has a child of another
// process in the trace: the call's receiving side is there.
func calledInTrace(sp []span, c int, kids []int) bool {
	for _, k := range kids {
		if sp[k].res != sp[c].res {
			return true
		}
	}
	return false
}

// hexID is hex.EncodeToString(id[:]) with one allocation, not two.
func hexID(id [16]byte) string {
	var b [32]byte
	hex.Encode(b[:], id[:])
	return string(b[:])
}

func isServerStage(s correlate.Stage) bool {
	return s == correlate.StageQueue || s == correlate.StageBatchWait || s == correlate.StageExec || s == correlate.StagePostprocess
}

// skewInto is how far a child span [from, to] of another host must move
// to fit its parent [pFrom, pTo], centred in it: 0 if it fits, or if it is
// longer than its parent (then no place is right).
func skewInto(pFrom, pTo, from, to int64) int64 {
	if (from >= pFrom && to <= pTo) || to-from > pTo-pFrom {
		return 0
	}
	return pFrom + ((pTo-pFrom)-(to-from))/2 - from
}

// covered is how many ns a span's children cover within it (overlaps
// once), given their windows clipped to it.
func covered(kids []int, lo, hi []int64) float64 {
	if len(kids) == 0 {
		return 0
	}
	var buf [16][2]int64 // nearly every span has fewer children: no allocation
	iv := buf[:0]
	for _, k := range kids {
		if a, b := lo[k], hi[k]; b > a {
			iv = append(iv, [2]int64{a, b})
		}
	}
	slices.SortFunc(iv, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var total, curA, curB int64
	for n, x := range iv {
		if n == 0 || x[0] > curB {
			total += curB - curA
			curA, curB = x[0], x[1]
		} else if x[1] > curB {
			curB = x[1]
		}
	}
	total += curB - curA
	return float64(total)
}

// extras are the stage times s's attributes and events give (ms).
func (a *Assembler) extras(s *span, kids []int, sp []span) []timed {
	out := s.extra
	if len(s.events) == 0 { // no From event on s: no event stage (most spans)
		return out
	}
	for _, es := range a.cfg.EventStages {
		from, ok := eventAt(s, es.From)
		if !ok {
			continue
		}
		to, ok := eventAt(s, es.To)
		for _, k := range kids {
			if ok {
				break
			}
			to, ok = eventAt(&sp[k], es.To)
		}
		if ok && to >= from {
			out = append(out[:len(out):len(out)], timed{es.Stage, float64(to-from) / 1e6})
		}
	}
	return out
}

func eventAt(s *span, name string) (int64, bool) {
	for _, e := range s.events {
		if e.name == name {
			return e.at, true
		}
	}
	return 0, false
}

// status is the sample's status from the entry span: timeout, error or ok.
func status(e *span, code string) string {
	n, err := strconv.Atoi(code)
	// No HTTP status is under 100: such a code is gRPC's.
	grpc := err == nil && n < 100
	switch {
	case e.timedOut || n == 408 || n == 504 || (grpc && n == grpcDeadlineExceeded):
		return "timeout"
	case e.failed || n >= 500 || (grpc && grpcServerErrors[n]):
		return "error"
	}
	return "ok"
}

// gRPC status codes: DEADLINE_EXCEEDED, and those that say the server
// failed (UNKNOWN, RESOURCE_EXHAUSTED, INTERNAL, UNAVAILABLE, DATA_LOSS;
// the OpenTelemetry gRPC conventions' server errors, with overload). A
// proxy such as Envoy sets no span status for them.
const grpcDeadlineExceeded = 4

var grpcServerErrors = map[int]bool{2: true, 8: true, 13: true, 14: true, 15: true}
