package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Sink stores finished samples (the store's InsertSamples, which is
// idempotent by time and request id). An error keeps them for the next
// try.
type Sink func(ctx context.Context, samples []correlate.Sample) error

// Options are the Assembler's collaborators and limits beyond Config.
type Options struct {
	Sink Sink
	Now  func() time.Time // nil = time.Now
	// MaxAge and MaxFuture bound a sample's time around now, as the
	// sample API does; 0 MaxAge = any age.
	MaxAge, MaxFuture time.Duration
	// Oldest is the earliest sample time the samples retention keeps
	// (zero: none); older traces are dropped as out of the window. It is
	// called under the assembler's lock, so it must not block. nil = none.
	Oldest func() time.Time
	// MaxPending bounds samples waiting for the sink (the store being
	// down); past it Add answers ErrBusy. 0 = 50,000.
	MaxPending int
	// Log hears of samples lost: those still unstored when Run stops
	// (their exports were answered 200). nil = not logged.
	Log *slog.Logger
}

// ErrBusy means the buffer cannot take more now (the store is not taking
// samples): the sender should retry later (OTLP: 503 with Retry-After).
var ErrBusy = errors.New("otlp: samples are waiting for the store; retry later")

// Assembler holds the spans of incomplete traces and turns each trace
// into a sample once its entry span has arrived and Grace has passed.
//
// Memory: at most Config.MaxSpans spans (each 0.15–0.35 KB: ids, times, the
// resolved stage and dimension values — not the attributes — and at most
// maxSpanEvents stage events), a trace's room never past its span limit,
// plus the ids
// of traces emitted in the last MaxWait (at most MaxSpans of them), plus
// MaxPending samples, plus the mapper's caches (at most 4,096 rule
// verdicts and dimension sets and 65,536 distinct values: a few MB), plus
// the span slices kept for new traces (at most 4,096 of at most 16
// spans) and emit's scratch (kept up to 16,384 traces), plus
// the mapped-span scratch kept for reuse (0.15 KB a span, slices of at
// most 8,192 spans, about one per export being filed), plus up to
// maxQueued checked exports waiting to be filed (each a decoded request:
// about three times its body, under the ingest body limit). Time: a trace
// waits Grace after its entry span arrives, MaxWait at most without one
// (ten MaxWaits when its spans' flags say their root is local, still
// running);
// under memory pressure the oldest traces finish early.
type Assembler struct {
	cfg  Config
	opt  Options
	m    *mapper
	mu   sync.Mutex
	byID map[[16]byte]*trace
	held int      // spans in byID
	age  []*trace // by first arrival: expiry and eviction
	rdy  []ready  // by entry arrival: emission after Grace
	// rdyRemote: traces whose entry so far is a span under a remote parent,
	// by its arrival: emission after remoteGrace (see there).
	rdyRemote []ready
	done      map[[16]byte]int64
	doneQ     []doneID
	pending   []correlate.Sample
	free      [][]span   // span slices of built traces, for new ones
	emitMu    sync.Mutex // one emit at a time; guards due and built
	due       []detached
	built     []correlate.Sample
	storing   int        // samples the store has taken and not yet stored (mu)
	storeMu   sync.Mutex // one store at a time
	// Checked requests wait in queue (qmu) for the filer (fileMu: one at
	// a time, in order); running says Run's filer is there to wake.
	qmu         sync.Mutex
	queue       []filing
	queuedSpans int
	fileMu      sync.Mutex
	running     atomic.Bool
	wake        chan struct{}
	stats       Stats
}

type trace struct {
	id      [16]byte
	spans   []span
	first   int64 // arrival of the first span (Unix ns, server clock); re-armed by a wait for a local root
	rearms  int8  // MaxWaits added waiting for a local root (awaitsLocalRoot)
	entryAt int64 // arrival of the entry span; 0 = not yet
	rooted  bool  // the entry span is a root (no entry_span): none comes above it
	// incoming counts the spans of the request being added that are yet
	// to be filed here (Add sizes spans with it).
	incoming int32
	gone     bool // emitted or dropped; queues drop it lazily
	named    bool // a span held names the model
}

// ready is a trace in rdy, with the entry arrival it was queued at: a
// later entry restarts the grace and queues it again (the earlier place
// is then stale).
type ready struct {
	t  *trace
	at int64
}

type doneID struct {
	id    [16]byte
	until int64
}

// NewAssembler returns an assembler; call Run (or Flush) to emit.
func NewAssembler(cfg Config, opt Options) *Assembler {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxPending == 0 {
		opt.MaxPending = 50_000
	}
	return &Assembler{cfg: cfg, opt: opt, m: newMapper(cfg), byID: map[[16]byte]*trace{}, done: map[[16]byte]int64{},
		wake: make(chan struct{}, 1)}
}

// Result is what Add did with a request's spans.
type Result struct {
	Spans, Rejected int
	// Message says why spans were rejected, naming each reason with a
	// count and the first offending span's place in the request.
	Message string
}

// Add checks req's spans and queues the request to be filed: invalid
// spans are rejected (counted in Result, as OTLP's partial_success
// reports them); the rest are filed under their traces by Run's filer, so
// the exporter's next request is read while this one is mapped (with one
// export in flight, as the SDK sends, mapping was half the time between
// answers). Spans already held or of a trace already emitted (a retry)
// are dropped quietly when filed. Add fails only with ErrBusy, taking
// nothing. Without Run, or past maxQueued waiting requests, Add files
// the queue itself: the queue stays bounded and nothing waits forever.
// Add owns req: once filed, refused or found empty, its memory goes back
// for the next request (see release).
func (a *Assembler) Add(req Request) (Result, error) {
	if a.busy() {
		a.stats.Busy.Add(1)
		release(req)
		return Result{}, ErrBusy
	}
	res, valid := check(req)
	a.stats.Spans[SpanRejected].Add(int64(res.Rejected))
	if valid == 0 {
		release(req)
		return res, nil
	}
	a.qmu.Lock()
	a.queue = append(a.queue, filing{req: req, at: a.opt.Now().UnixNano(), spans: valid})
	a.queuedSpans += valid
	over := len(a.queue) > maxQueued
	a.qmu.Unlock()
	if over || !a.running.Load() {
		a.fileQueued()
	} else {
		select {
		case a.wake <- struct{}{}:
		default: // the filer is due already
		}
	}
	return res, nil
}

// maxQueued bounds the checked requests waiting for the filer (each is a
// decoded export: about 3 times its body), plus one for each Add filing
// the queue at the time (at most the route's concurrent exports).
const maxQueued = 8

// filing is a checked request waiting to be filed.
type filing struct {
	req   Request
	at    int64 // arrival (Unix ns, server clock): the trace's clock starts here
	spans int   // valid spans
}

// check counts req's spans and rejects the invalid ones, naming each
// reason with a count and the first offender's place in the request.
func check(req Request) (res Result, valid int) {
	type reject struct {
		n     int
		first string
	}
	var (
		rejects map[string]*reject
		order   []string
	)
	if req.d == nil {
		return res, 0
	}
	for i := range req.d.spans {
		sp := &req.d.spans[i]
		res.Spans++
		reason := invalid(sp)
		if reason == "" {
			valid++
			continue
		}
		res.Rejected++
		if rejects == nil {
			rejects = map[string]*reject{}
		}
		r := rejects[reason]
		if r == nil {
			r = &reject{first: fmt.Sprintf("resource_spans[%d].scope_spans[%d].spans[%d]", sp.rs, sp.ss, sp.idx)}
			rejects[reason] = r
			order = append(order, reason)
		}
		r.n++
	}
	if res.Rejected > 0 {
		parts := make([]string, len(order))
		for n, reason := range order {
			parts[n] = fmt.Sprintf("%d with %s (first: %s)", rejects[reason].n, reason, rejects[reason].first)
		}
		res.Message = fmt.Sprintf("%d of %d spans rejected: %s", res.Rejected, res.Spans, strings.Join(parts, "; "))
	}
	return res, valid
}

// fileQueued files the queued requests in arrival order.
func (a *Assembler) fileQueued() {
	a.fileMu.Lock()
	defer a.fileMu.Unlock()
	for {
		a.qmu.Lock()
		if len(a.queue) == 0 {
			a.qmu.Unlock()
			return
		}
		f := a.queue[0]
		a.queue[0] = filing{}
		a.queue = a.queue[1:]
		a.qmu.Unlock()
		a.file(f)
	}
}

// file takes the valid spans of a checked request into the buffer. Spans
// past MaxSpansPerTrace are rejected (counted; the request was answered).
func (a *Assembler) file(f filing) {
	now := f.at
	// Map the spans first, outside the buffer's lock (the mapper has its
	// own), so flushing goes on meanwhile. The mapped spans are scratch,
	// copied into their traces below: one slice, reused (it was as many
	// bytes as the decoded request again).
	scratch := mappedPool.Get().(*[]mapped)
	ms := slices.Grow((*scratch)[:0], f.spans)
	defer func() {
		clear(ms) // no strings or traces kept alive from the pool
		if cap(ms) <= maxPooledSpans {
			*scratch = ms[:0]
			mappedPool.Put(scratch)
		}
	}()
	a.m.mu.Lock()
	d := f.req.d
	var rd *resDims
	rdRes := int32(-1) // the resource rd was read from
	for i := range d.spans {
		sp := &d.spans[i]
		if invalid(sp) != "" { // rejected by check
			continue
		}
		// A request's spans come resource by resource: each is read once
		// (a rejected span before may have been the first of its resource).
		if rd == nil || sp.rs != rdRes {
			rd, rdRes = a.m.resource(d.attrs(d.res[sp.rs])), sp.rs
		}
		ms = append(ms, mapped{tid: sp.traceID})
		m := &ms[len(ms)-1]
		a.m.resolve(&m.s, sp, d, rd)
	}
	// The span's and the resource's values read last are views into the
	// request: not kept.
	clear(a.m.spanVals.v)
	a.m.forgetResource()
	a.m.mu.Unlock()
	release(f.req)
	a.mu.Lock()
	var accepted, late, dup, over int64
	// First find each span's trace and count what this request brings
	// each, so a trace's spans grow once per request, not span by span.
	for n := range ms {
		m := &ms[n]
		// A trace's spans mostly come together: the one before decides.
		if n > 0 && ms[n-1].tid == m.tid {
			if m.t = ms[n-1].t; m.t == nil {
				late++
			} else {
				m.t.incoming++
			}
			continue
		}
		// A held trace is never in done (forgetLocked moves it there),
		// so done is asked only about ids not held.
		t := a.byID[m.tid]
		if t == nil {
			if _, ok := a.done[m.tid]; ok {
				late++
				continue
			}
			t = &trace{id: m.tid, first: now}
			a.byID[m.tid] = t
			a.age = append(a.age, t)
		}
		m.t = t
		t.incoming++
	}
	for n := range ms {
		m := &ms[n]
		t := m.t
		if t == nil {
			continue
		}
		if len(t.spans) == cap(t.spans) {
			// Room for what the request brings, up to the trace's limit
			// (and the entry span let in past it): spans past it are
			// rejected below, and must not be paid for.
			room := max(1, min(int(t.incoming), a.cfg.MaxSpansPerTrace+1-len(t.spans)))
			if t.spans == nil {
				t.spans = a.spanSlice(room)
			} else {
				t.spans = slices.Grow(t.spans, room)
			}
		}
		t.incoming--
		if t.has(m.s.id) {
			dup++
			continue
		}
		// The entry span is let in past the limit (one more at most): a
		// root ends, and so is exported, last, and a trace cut before it
		// would be stored with a child's time as its total. So is the
		// first span naming the model (one more): a streamed response's
		// per-chunk spans filled the limit before the model server's span
		// came, and the trace was dropped for naming no model.
		names := m.s.dims[dimModel] != ""
		// So is a root after an entry under a remote parent (one more): it
		// is above that entry, and the entry it ends with.
		lateRoot := a.cfg.EntrySpan == "" && m.s.parent == [8]byte{} && !t.rooted
		if len(t.spans) >= a.cfg.MaxSpansPerTrace && (t.entryAt != 0 && !lateRoot || !a.isEntry(&m.s)) && (t.named || !names) {
			over++
			continue
		}
		t.named = t.named || names
		t.spans = append(t.spans, m.s)
		a.held++
		accepted++
		// An entry starts the grace; one above it (the caller's span
		// after the model server's, both under a remote parent) restarts it.
		// Nothing is above a root: a span under a remote parent after it
		// (the model server's, under a sidecar's span) restarts nothing.
		if a.isEntry(&m.s) && (t.entryAt == 0 || (a.cfg.EntrySpan == "" && !t.rooted && !t.has(m.s.parent))) {
			t.entryAt = now
			if a.cfg.EntrySpan == "" && m.s.parent != [8]byte{} {
				a.rdyRemote = append(a.rdyRemote, ready{t, now})
			} else {
				t.rooted = a.cfg.EntrySpan == ""
				a.rdy = append(a.rdy, ready{t, now})
			}
		}
	}
	a.stats.Spans[SpanAccepted].Add(accepted)
	a.stats.Spans[SpanLate].Add(late)
	a.stats.Spans[SpanDuplicate].Add(dup)
	a.stats.Spans[SpanRejected].Add(over)
	var out []correlate.Sample
	for a.held > a.cfg.MaxSpans {
		if s, ok := a.evictLocked(now); ok {
			out = append(out, s)
		}
	}
	a.pending = append(a.pending, out...)
	// Queued no more, under the buffer's lock with held: Held never
	// counts these spans twice (a.mu, then qmu; Held takes them apart).
	a.qmu.Lock()
	a.queuedSpans -= f.spans
	a.qmu.Unlock()
	a.mu.Unlock()
}

// mapped is a span resolved for the buffer, with its trace id.
type mapped struct {
	t   *trace // set under the buffer's lock; nil = late
	tid [16]byte
	s   span
}

var mappedPool = sync.Pool{New: func() any { return new([]mapped) }}

// maxPooledSpans bounds the scratch slices kept for reuse (1.2 MB each).
const maxPooledSpans = 8192

// maxFreeSpans bounds the span slices kept for new traces (Assembler.free)
// and maxFreeCap the size of one: most traces are a handful of spans; a
// huge one is left to the GC.
const maxFreeSpans, maxFreeCap = 4096, 16

// maxScratchTraces bounds the traces emit's scratch slices are kept for.
const maxScratchTraces = 16384

// spanSlice returns an empty slice with room for n spans, recycled when
// one is free. Called under mu.
func (a *Assembler) spanSlice(n int) []span {
	if k := len(a.free); k > 0 && cap(a.free[k-1]) >= n {
		sp := a.free[k-1]
		a.free = a.free[:k-1]
		return sp
	}
	return make([]span, 0, n)
}

// busy reports whether samples waiting for the sink fill their bound.
func (a *Assembler) busy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waitingLocked() >= a.opt.MaxPending
}

// waitingLocked counts the samples not yet stored: pending, and those the
// store has taken and not yet finished.
func (a *Assembler) waitingLocked() int { return len(a.pending) + a.storing }

// invalid says what is wrong with a span's ids and times ("" if nothing).
// Ids of the wrong length never get here: decoding refuses them.
func invalid(sp *wireSpan) string {
	start, end := sp.start, sp.end
	switch {
	case sp.traceID == [16]byte{}:
		return "an invalid trace_id (all zero or missing)"
	case sp.id == [8]byte{}:
		return "an invalid span_id (all zero or missing)"
	case start == 0 || end == 0:
		return "no start or end time"
	case end < start:
		return "an end time before its start time"
	case end > math.MaxInt64: // past 2262: read as Unix ns it turns negative
		return "a time past the year 2262"
	}
	return ""
}

// maxRearms bounds the MaxWaits a trace waits for a local root: 1 + 9,
// ten minutes at the default one.
const maxRearms = 9

// awaitsLocalRoot reports whether a topmost span of t (its parent not
// held) has a parent its flags say is local to its process.
func (t *trace) awaitsLocalRoot() bool {
	for i := range t.spans {
		if t.spans[i].parentLocal && !t.has(t.spans[i].parent) {
			return true
		}
	}
	return false
}

func (t *trace) has(id [8]byte) bool {
	for i := range t.spans {
		if t.spans[i].id == id {
			return true
		}
	}
	return false
}

// remoteGrace is how long a trace whose entry so far is a span under a
// remote parent waits: that span may be the model server's, whose caller
// (the gateway) exports its spans in its own batches — seconds apart
// without a Collector in between. Three graces, at least 15 s (the SDK's
// batch delay is 5 s), at most MaxWait; a caller's span arriving within
// it becomes the entry and restarts the (shorter) grace.
func (a *Assembler) remoteGrace() time.Duration {
	return min(a.cfg.MaxWait, max(3*a.cfg.Grace, 15*time.Second))
}

// isEntry reports whether s may give the total: the configured span name,
// or else a root span or one whose flags say its parent is remote (the
// caller propagated its context and exports elsewhere, or nowhere) — the
// entry if that parent is not in the trace.
func (a *Assembler) isEntry(s *span) bool {
	if a.cfg.EntrySpan != "" {
		return s.name == a.cfg.EntrySpan
	}
	return s.parent == [8]byte{} || s.parentRemote
}

// evictLocked finishes the oldest trace to make room: emitted if its entry
// span is there (counted as cut short: spans of it still on their way
// will be late); else, as at MaxWait, its topmost span stands in for its
// root — unless an entry_span is configured or the root is local, still
// running: then the trace is dropped.
func (a *Assembler) evictLocked(now int64) (correlate.Sample, bool) {
	for len(a.age) > 0 {
		t := a.age[0]
		a.age = a.age[1:]
		if t.gone {
			continue
		}
		if t.entryAt == 0 && (a.cfg.EntrySpan != "" || t.awaitsLocalRoot()) {
			a.dropLocked(t, DropEvicted, now)
			return correlate.Sample{}, false
		}
		s, ok := a.finishLocked(t, t.entryAt == 0, now)
		if ok {
			a.stats.CutShort.Add(1)
		}
		return s, ok
	}
	for len(a.rdy)+len(a.rdyRemote) > 0 { // traces past MaxWait still waiting out Grace
		q := &a.rdy
		if len(a.rdy) == 0 {
			q = &a.rdyRemote
		}
		t := (*q)[0].t
		*q = (*q)[1:]
		if !t.gone {
			a.stats.CutShort.Add(1)
			return a.finishLocked(t, false, now)
		}
	}
	return correlate.Sample{}, false
}

// finishLocked turns t into a sample (or drops it, counting why) and
// forgets it, remembering its id for MaxWait so retries and late spans
// are not taken for a new trace. now is the caller's clock (Unix ns), read
// once per Add or Flush.
func (a *Assembler) finishLocked(t *trace, expired bool, now int64) (correlate.Sample, bool) {
	// Evictions are rare: the window check reads the clock afresh, as
	// the request being filed may have waited in the queue.
	return a.finish(a.detachLocked(t, expired, now), a.opt.Now())
}

// detached is a trace taken out of the buffer, to be built without the
// lock.
type detached struct {
	id      [16]byte
	spans   []span
	expired bool
}

// detachLocked forgets t (see finishLocked), handing back its spans.
func (a *Assembler) detachLocked(t *trace, expired bool, now int64) detached {
	d := detached{t.id, t.spans, expired}
	a.forgetLocked(t, now)
	return d
}

// finish builds a detached trace's sample, counting the trace as emitted
// or dropped; now is the clock the sample's time is checked against.
func (a *Assembler) finish(d detached, now time.Time) (correlate.Sample, bool) {
	s, reason, ok := a.build(d.id, d.spans, d.expired, now)
	if !ok {
		a.stats.Dropped[reason].Add(1)
		return correlate.Sample{}, false
	}
	a.stats.Traces.Add(1)
	return s, true
}

func (a *Assembler) dropLocked(t *trace, reason Drop, now int64) {
	a.stats.Dropped[reason].Add(1)
	a.forgetLocked(t, now)
}

func (a *Assembler) forgetLocked(t *trace, now int64) {
	t.gone = true
	a.held -= len(t.spans)
	delete(a.byID, t.id)
	until := now + a.cfg.MaxWait.Nanoseconds()
	a.done[t.id] = until
	a.doneQ = append(a.doneQ, doneID{t.id, until})
	for len(a.doneQ) > a.cfg.MaxSpans { // bound the memory of ids
		delete(a.done, a.doneQ[0].id)
		a.doneQ = a.doneQ[1:]
	}
	t.spans = nil
}

// Run flushes every tick until ctx ends, then once more. Building the
// due traces' samples and storing them run side by side: the next
// samples are built while the store takes the last ones.
func (a *Assembler) Run(ctx context.Context, tick time.Duration) {
	filed := onWake(ctx, a.wake, a.fileQueued)
	a.running.Store(true)
	kick := make(chan struct{}, 1)
	stored := onWake(ctx, kick, func() { _ = a.store(ctx) })
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			<-stored
			<-filed
			a.running.Store(false)
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := a.Flush(fctx, true); err != nil && a.opt.Log != nil {
				// Accepted, answered, and now lost: say so, with how many.
				_, _, pending := a.Held()
				a.opt.Log.Error("otlp: samples of accepted traces could not be stored before stopping; they are lost",
					"samples", pending, "err", err)
			}
			cancel()
			return
		case <-tk.C:
			if a.emit(false) > 0 {
				select {
				case kick <- struct{}{}:
				default: // a store is due already
				}
			}
		}
	}
}

// onWake runs f in a goroutine each time wake delivers, until ctx ends;
// the channel it returns closes once that goroutine is done.
func onWake(ctx context.Context, wake <-chan struct{}, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				f()
			}
		}
	}()
	return done
}

// Flush emits the traces that are due (all traces with an entry span when
// final: the server is stopping) and hands the samples to the sink. A
// sink error keeps them pending and is returned.
func (a *Assembler) Flush(ctx context.Context, final bool) error {
	a.fileQueued()
	a.emit(final)
	return a.store(ctx)
}

// emit moves the traces that are due out of the buffer and their samples
// into pending, and returns how many samples are pending.
func (a *Assembler) emit(final bool) int {
	a.emitMu.Lock()
	defer a.emitMu.Unlock()
	// One clock read for the whole emit: due traces' samples are checked
	// against it too (reading it per trace was a tenth of building).
	clock := a.opt.Now()
	ns := clock.UnixNano()
	grace, wait := a.cfg.Grace.Nanoseconds(), a.cfg.MaxWait.Nanoseconds()
	a.mu.Lock()
	// Due traces leave the buffer under the lock; their samples are built
	// after it, so Add is not held up meanwhile.
	due := a.due[:0]
	for _, q := range []struct {
		rdy  *[]ready
		wait int64
	}{{&a.rdy, grace}, {&a.rdyRemote, a.remoteGrace().Nanoseconds()}} {
		for len(*q.rdy) > 0 {
			r := (*q.rdy)[0]
			if !r.t.gone && r.at == r.t.entryAt { // else emitted, or its grace restarted
				if !final && r.at+q.wait > ns {
					break
				}
				due = append(due, a.detachLocked(r.t, false, ns))
			}
			*q.rdy = (*q.rdy)[1:]
		}
	}
	var rearmed []*trace
	for len(a.age) > 0 && (a.age[0].gone || a.age[0].first+wait <= ns) {
		t := a.age[0]
		a.age = a.age[1:]
		if t.gone || t.entryAt != 0 { // an entry span came late: rdy has it
			continue
		}
		// A request longer than MaxWait: its children ended and were
		// exported, its root — local to their process, the flags say — is
		// still running. Standing in for it gave a wrong sample and lost
		// the root as late; it is waited for, up to maxRearms more MaxWaits.
		if !final && t.rearms < maxRearms && t.awaitsLocalRoot() {
			t.rearms++
			t.first = ns
			rearmed = append(rearmed, t)
			continue
		}
		due = append(due, a.detachLocked(t, true, ns))
	}
	a.age = append(a.age, rearmed...)
	for len(a.doneQ) > 0 && a.doneQ[0].until <= ns {
		if a.done[a.doneQ[0].id] == a.doneQ[0].until {
			delete(a.done, a.doneQ[0].id)
		}
		a.doneQ = a.doneQ[1:]
	}
	a.mu.Unlock()
	built := a.built[:0]
	for _, d := range due {
		if s, ok := a.finish(d, clock); ok {
			built = append(built, s)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending = append(a.pending, built...)
	// The built traces' span slices go to new traces (a trace's spans were
	// an eighth of the receiver's allocation); the samples hold strings,
	// not spans.
	for _, d := range due {
		if c := cap(d.spans); c > 0 && c <= maxFreeCap && len(a.free) < maxFreeSpans {
			// Past len a slice holds no span: only append writes there.
			clear(d.spans)
			a.free = append(a.free, d.spans[:0])
		}
	}
	// Both scratch slices are emit's alone (emitMu), kept for the next.
	clear(due)
	clear(built)
	if cap(due) > maxScratchTraces { // after a burst: not kept
		due, built = nil, nil
	}
	a.due, a.built = due[:0], built[:0]
	return len(a.pending)
}

// store hands the pending samples to the sink. A sink error puts them
// back in front of what was emitted meanwhile and is returned.
func (a *Assembler) store(ctx context.Context) error {
	a.storeMu.Lock()
	defer a.storeMu.Unlock()
	a.mu.Lock()
	batch := a.pending
	a.pending, a.storing = nil, len(batch)
	a.mu.Unlock()
	// Chunks keep one store transaction (and its memory) bounded.
	for len(batch) > 0 {
		n := min(len(batch), 5000)
		err := a.opt.Sink(ctx, batch[:n])
		a.mu.Lock()
		if err != nil {
			a.pending, a.storing = append(batch, a.pending...), 0
			a.mu.Unlock()
			a.stats.SinkErrors.Add(1)
			return err
		}
		a.storing -= n
		a.mu.Unlock()
		a.stats.Samples.Add(int64(n))
		batch = batch[n:]
	}
	return nil
}

// Held returns how many traces and spans are buffered (spans queued to
// be filed among them) and how many samples wait for the sink.
func (a *Assembler) Held() (traces, spans, pending int) {
	a.qmu.Lock()
	queued := a.queuedSpans
	a.qmu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byID), a.held + queued, a.waitingLocked()
}

// Stats are the Assembler's counters, for /metrics.
type Stats struct {
	Spans      [numSpanOutcomes]atomic.Int64
	Dropped    [numDrops]atomic.Int64
	Traces     atomic.Int64 // turned into samples
	Samples    atomic.Int64 // stored by the sink
	SinkErrors atomic.Int64
	Busy       atomic.Int64 // requests refused with ErrBusy
	CutShort   atomic.Int64 // traces emitted before their grace ended, to make room
}

// Stats returns the live counters.
func (a *Assembler) Stats() *Stats { return &a.stats }

// SpanOutcome is what became of a received span.
type SpanOutcome int

const (
	SpanAccepted  SpanOutcome = iota
	SpanRejected              // invalid (reported in partial_success) or past max_spans_per_trace
	SpanDuplicate             // already held (a retry)
	SpanLate                  // its trace was already emitted (a retry, or a straggler)
	numSpanOutcomes
)

// SpanOutcomes names the outcomes, for metric labels.
var SpanOutcomes = [numSpanOutcomes]string{"accepted", "rejected", "duplicate", "late"}

// Drop is why a trace mapped to no sample.
type Drop int

const (
	DropNoEntry     Drop = iota // its entry span never came within MaxWait
	DropNoModel                 // no attribute named the model
	DropEvicted                 // buffer full before its entry span came, and none could stand in
	DropOutWindow               // its time is outside the accepted window
	DropImplausible             // its entry or a stage lasted over correlate.MaxLatencyMs
	numDrops
)

// DropReasons names the reasons, for metric labels.
var DropReasons = [numDrops]string{"no_entry_span", "no_model", "evicted", "out_of_window", "implausible"}
