package otlp

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/waterline-dev/waterline/correlate"
)

// span is what the buffer keeps of one OTLP span: its place in the tree,
// its times, and everything the mapping needs already resolved, so the
// span's attributes (most of its memory) are not held.
type span struct {
	id, parent [8]byte
	start, end int64 // Unix ns
	// res identifies the span's resource (a hash of its attributes): the
	// spans of one process share it across exports.
	res uint64
	// stageLeaf and stageInner are the stage the first matching rule
	// gives the span if it turns out to be a leaf or not (rules may ask
	// for leaves, and children may arrive later); -1 = no rule.
	stageLeaf, stageInner int8
	failed, timedOut      bool // span status ERROR; error.type or status says timeout
	// parentLocal: the span's flags say its parent is in the same process
	// (a local root still running, not a caller that exports elsewhere);
	// parentRemote: in another (a caller, or another service's call).
	parentLocal, parentRemote bool
	client                    bool // a client span (a call out)

	extra  []timed // stage times from attributes
	events []event // only those the event stages name
	// dims are the span's dimension values, shared with every span that
	// has the same (spans of one resource mostly do); never nil.
	dims *[numDims]string
	name string
	// tokens are the span's prompt and generated token counts (tokenDims;
	// 0: not on the span).
	tokens [2]int32
}

// timed is a stage's time taken from an attribute.
type timed struct {
	stage correlate.Stage
	ms    float64
}

// event is a span event an EventStage names.
type event struct {
	name string
	at   int64 // Unix ns
}

const numDims = 11

// maxSpanEvents bounds the stage events kept of one span: every stage
// takes two (Triton's span carries six), and a span counts as one against
// the buffer's span limit whatever it holds.
const maxSpanEvents = 16

// dimIndex maps a Dim onto span.dims.
var dimIndex = func() map[Dim]int {
	m := map[Dim]int{}
	for i, d := range dims {
		m[d] = i
	}
	return m
}()

// The places in span.dims that build reads, and serverDims by place:
// looked up once here, not hashed per sample and span.
var (
	dimModel, dimVersion, dimTenant = dimIndex[DimModel], dimIndex[DimVersion], dimIndex[DimTenant]
	dimReplica, dimNode, dimEntry   = dimIndex[DimReplica], dimIndex[DimNode], dimIndex[DimEntry]
	dimBatchSize, dimSampleRate     = dimIndex[DimBatchSize], dimIndex[DimSampleRate]
	dimDependency, dimStatusCode    = dimIndex[DimDependency], dimIndex[DimStatusCode]
	dimService                      = dimIndex[DimService]
	serverDim                       = func() (out [numDims]bool) {
		for d := range serverDims {
			out[dimIndex[d]] = true
		}
		return out
	}()
	// spanDim: a dimension any of a span's listed attributes gives before
	// its resource's. A resource's version is the process's (an image
	// tag), a span's the model's (Triton's triton.model_version).
	spanDim = func() (out [numDims]bool) {
		out[dimIndex[DimVersion]] = true
		return out
	}()
)

// maxDimLen bounds a dimension value (they are labels; the sample API
// rejects longer ones, spans have them cut).
const maxDimLen = 256

// mapper resolves spans against a Config. Its caches are not safe for
// concurrent use: callers hold mu.
type mapper struct {
	mu         sync.Mutex // held by the caller around resource and resolve
	cfg        Config
	eventNames map[string]bool
	intern     map[string]string // dimension values, shared across spans
	// ruleAttrs are the attributes any rule looks at, sorted; a span's
	// stages depend only on its name, kind and these attributes' values,
	// so ruleCache keeps the rules' verdict per such key (the regular
	// expressions were most of the receiver's time). key is its buffer.
	ruleAttrs []string
	ruleCache map[string]verdict
	key       []byte
	// keys says, per attribute key, which dimensions read it and at which
	// place in their list (0 = first choice), and its slot if it is one of
	// slotKeys: the keys read by name (the rules', the attribute stages',
	// error.type). A span's attributes are read in one pass, instead of one
	// scan of the span's and its resource's attributes per key read.
	keys     map[string]keyUse
	keyTab   keyTable // keys, as read per attribute
	slotKeys []string
	// ruleSlot, stageSlot and errSlot are the slots of ruleAttrs,
	// cfg.AttrStages and error.type.
	ruleSlot, stageSlot []int
	errSlot             int
	tokenSlot           [2][]int    // of cfg.Dims[tokenDims[i]], in order
	tokenKey            [2][]string // those keys (looked up in cfg.Dims per span, they took a quarter of resolve)
	spanVals            slotVals    // the span being resolved's (scratch)
	res                 resDims     // the resource being read's (scratch)
	// dimSets shares spans' dimension values (bounded like ruleCache),
	// by where the values' bytes are (setKey). recentSets sits in front
	// of it, indexed by a hash of those addresses.
	dimSets    map[setKey]*[numDims]string
	recentSets [64]recentSet
	// numTexts caches numbers' texts by type and bits (direct-mapped):
	// formatting a float was most of a sample rate's cost.
	numTexts [256]numText
	// seed and resBuf hash resources (resDims.id).
	seed   maphash.Seed
	resBuf []byte
}

const maxDimSets = 4096

type dimKey struct {
	dim, prio int
	// bare: the value is a URL or request target read as the entry: its
	// query and fragment are cut off (secrets, unbounded values).
	bare bool
}

// bareEntry reports whether an entry attribute holds a URL or request
// target, query and all: http.target and http.url (the old conventions;
// Envoy's and Kong's), url.* (url.full; url.path should not hold a
// query, some instrumentations' does).
func bareEntry(key string) bool {
	return key == "http.target" || key == "http.url" || strings.HasPrefix(key, "url.")
}

// bare cuts a URL's or request target's query and fragment off, and an
// absolute URL's scheme and authority (Envoy's and Kong's http.url,
// url.full): the path alone.
func bare(v string) string {
	if i := strings.IndexAny(v, "?#"); i >= 0 {
		v = v[:i]
	}
	if i := strings.Index(v, "://"); i > 0 && !strings.ContainsRune(v[:i], '/') {
		rest := v[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
		return "/"
	}
	return v
}

type keyUse struct {
	dims []dimKey
	slot int // -1: none
}

// slotVals are the values of the slot keys in one attribute map (the
// first of equal keys, as pcommon.Map.Get finds).
type slotVals struct {
	v  []value
	ok []bool
}

func (m *mapper) newSlotVals() slotVals {
	return slotVals{v: make([]value, len(m.slotKeys)), ok: make([]bool, len(m.slotKeys))}
}

// resDims are the dimension values a resource gives, with the place in
// its dimension's list of the key that gave each (noPrio = none). A
// request's spans share their resource: it is read once.
type resDims struct {
	id    uint64 // the resource's identity: a hash of its attributes, in any order
	attrs attrList
	slots slotVals
	val   [numDims]string
	prio  [numDims]int
	// shared is val's shared set, found at the first span without
	// dimension attributes of its own (most child spans): those spans
	// take it without looking it up again.
	shared *[numDims]string
}

const noPrio = math.MaxInt

// maxRuleCache bounds ruleCache; a full cache is emptied (span names of
// unbounded variety — ids in names — only cost the matching again).
const maxRuleCache = 4096

// maxRuleKey bounds a cached key, so the cache stays under ~4 MB.
const maxRuleKey = 1024

func newMapper(cfg Config) *mapper {
	m := &mapper{cfg: cfg, eventNames: map[string]bool{}, intern: map[string]string{}, ruleCache: map[string]verdict{},
		dimSets: map[setKey]*[numDims]string{}, seed: maphash.MakeSeed()}
	for _, e := range cfg.EventStages {
		m.eventNames[e.From], m.eventNames[e.To] = true, true
	}
	seen := map[string]bool{}
	for _, r := range cfg.Rules {
		for k := range r.Attrs {
			if !seen[k] {
				seen[k] = true
				m.ruleAttrs = append(m.ruleAttrs, k)
			}
		}
	}
	sort.Strings(m.ruleAttrs)
	m.keys = map[string]keyUse{}
	slot := func(key string) int {
		u, ok := m.keys[key]
		if !ok || u.slot < 0 {
			u.slot = len(m.slotKeys)
			m.slotKeys = append(m.slotKeys, key)
			m.keys[key] = u
		}
		return u.slot
	}
	for _, k := range m.ruleAttrs {
		m.ruleSlot = append(m.ruleSlot, slot(k))
	}
	for _, as := range cfg.AttrStages {
		m.stageSlot = append(m.stageSlot, slot(as.Attr))
	}
	m.errSlot = slot("error.type")
	for i, d := range tokenDims {
		for _, key := range cfg.Dims[d] {
			m.tokenSlot[i] = append(m.tokenSlot[i], slot(key))
			m.tokenKey[i] = append(m.tokenKey[i], key)
		}
	}
	for i, d := range dims {
		for p, key := range cfg.Dims[d] {
			u, ok := m.keys[key]
			if !ok {
				u.slot = -1
			}
			u.dims = append(u.dims, dimKey{i, p, d == DimEntry && bareEntry(key)})
			m.keys[key] = u
		}
	}
	m.keyTab = newKeyTable(m.keys)
	m.spanVals = m.newSlotVals()
	return m
}

// keyTable is a read-only open-addressing table of the keys the mapper
// reads. Every attribute of every span is looked up in it, and most are
// not there: hashing a few of the key's bytes and comparing on a length
// match is about half the cost of a map lookup (those were a fifth of the
// mapping).
type keyTable struct {
	slots []keySlot // a power of two, at most a quarter full
	mask  uint32
}

type keySlot struct {
	key  string
	used bool
	use  keyUse
}

func newKeyTable(keys map[string]keyUse) keyTable {
	size := 16
	for size < 4*len(keys) {
		size *= 2
	}
	t := keyTable{slots: make([]keySlot, size), mask: uint32(size - 1)}
	for k, u := range keys {
		i := keyHash(k) & t.mask
		for t.slots[i].used {
			i = (i + 1) & t.mask
		}
		t.slots[i] = keySlot{k, true, u}
	}
	return t
}

// keyHash mixes a key's length and three of its bytes (keys sharing a
// prefix, "http." or "gen_ai.", differ in length or near the end).
func keyHash(k string) uint32 {
	n := len(k)
	if n == 0 {
		return 0
	}
	h := uint32(n)*0x9e3779b1 ^ uint32(k[n-1])*0x85ebca6b ^ uint32(k[n/2])*0xc2b2ae35 ^ uint32(k[n/3])*0x27d4eb2f
	return h ^ h>>15
}

func (t *keyTable) get(k string) (keyUse, bool) {
	for i := keyHash(k) & t.mask; t.slots[i].used; i = (i + 1) & t.mask {
		if t.slots[i].key == k {
			return t.slots[i].use, true
		}
	}
	return keyUse{}, false
}

// resource reads the dimensions and slot keys of a resource.
// It is m's scratch, valid until the next call: a request's spans come
// resource by resource, and the filer reads one at a time.
func (m *mapper) resource(res attrList) *resDims {
	slots := m.res.slots
	if slots.v == nil {
		slots = m.newSlotVals()
	}
	r := &m.res
	*r = resDims{attrs: res, slots: slots}
	m.readAttrs(r.attrs, &r.val, &r.prio, &r.slots)
	// The same process's resource in another export may list its
	// attributes in another order: the pairs' hashes are summed.
	for _, kv := range r.attrs {
		m.resBuf = appendText(append(append(m.resBuf[:0], kv.key...), 0), kv.val)
		r.id += maphash.Bytes(m.seed, m.resBuf)
	}
	return r
}

// forgetResource drops the scratch resource's views into its request,
// keeping its slices for the next.
func (m *mapper) forgetResource() {
	clear(m.res.slots.v)
	m.res = resDims{slots: m.res.slots}
}

// readAttrs sets val and prio from attrs where a key ranks before prio's
// (the first of equal keys wins), and sv to the slot keys' values; it
// reports whether any dimension was set.
func (m *mapper) readAttrs(attrs attrList, val *[numDims]string, prio *[numDims]int, sv *slotVals) bool {
	for i := range prio {
		prio[i] = noPrio
	}
	clear(sv.ok)
	found := false
	for i := range attrs {
		k, v := attrs[i].key, attrs[i].val
		u, ok := m.keyTab.get(k)
		if !ok {
			continue
		}
		if u.slot >= 0 && !sv.ok[u.slot] {
			sv.v[u.slot], sv.ok[u.slot] = v, true
		}
		for _, dk := range u.dims {
			if dk.prio >= prio[dk.dim] {
				continue
			}
			if t := m.valueText(v, dk.bare); t != "" {
				val[dk.dim], prio[dk.dim] = t, dk.prio
				found = true
			}
		}
	}
	return found
}

// verdict is what ruleCache keeps for a key: the rules' stages, and the
// span name as m.text gives it, so a cached span's name is not looked up
// again in intern (one string-keyed lookup less per span).
type verdict struct {
	leaf, inner int8
	name        string
}

// stages returns the stage the first matching rule gives a span with this
// name, kind and attributes as a leaf and as an inner span (-1 = none).
func (m *mapper) stages(name, kind string, a attrs) (leaf, inner int8) {
	v := m.verdict(name, kind, a)
	return v.leaf, v.inner
}

// verdict is stages' answer with m.text(name).
func (m *mapper) verdict(name, kind string, a attrs) verdict {
	if len(m.cfg.Rules) == 0 {
		return verdict{-1, -1, m.text(name)}
	}
	// The key: name, kind, then each rule attribute's value as text would
	// render it (or its absence), each length-prefixed.
	key := appendField(m.key[:0], func(b []byte) []byte { return append(b, name...) })
	key = appendField(key, func(b []byte) []byte { return append(b, kind...) })
	for i, k := range m.ruleAttrs {
		v, ok := a.slot(m.ruleSlot[i], k)
		if !ok {
			key = append(key, 0)
			continue
		}
		key = append(key, 1)
		key = appendField(key, func(b []byte) []byte { return appendText(b, v) })
	}
	m.key = key
	if v, ok := m.ruleCache[string(key)]; ok {
		return v
	}
	leaf, inner := int8(-1), int8(-1)
	for _, r := range m.cfg.Rules {
		if leaf >= 0 && inner >= 0 {
			break
		}
		if !r.matches(name, kind, a) {
			continue
		}
		if leaf < 0 {
			leaf = int8(r.Stage)
		}
		if inner < 0 && !r.Leaf {
			inner = int8(r.Stage)
		}
	}
	v := verdict{leaf, inner, m.text(name)}
	if len(key) > maxRuleKey { // a huge name or value: not worth keeping
		return v
	}
	if len(m.ruleCache) >= maxRuleCache {
		clear(m.ruleCache)
	}
	m.ruleCache[string(key)] = v
	return v
}

// attrs finds attributes on a span, then its resource.
type attrs struct {
	span, res attrList
	// sv and rv are the slot keys' values in span and res, when already
	// read (nil: slot looks them up).
	sv, rv *slotVals
	// keys finds a slot key's slot (with sv and rv), so get reads a rule's
	// attribute there instead of scanning the attributes per rule and span
	// (a resource of many attributes made that their product).
	keys *keyTable
}

func (a attrs) get(key string) (value, bool) {
	if a.keys != nil && a.sv != nil {
		if u, ok := a.keys.get(key); ok && u.slot >= 0 {
			return a.slot(u.slot, key)
		}
	}
	if v, ok := a.span.get(key); ok {
		return v, true
	}
	return a.res.get(key)
}

// attrList is a span's or a resource's attributes, in the request's order.
type attrList []keyValue

// get finds key's first value, as pcommon.Map.Get does.
func (l attrList) get(key string) (value, bool) {
	for i := range l {
		if l[i].key == key {
			return l[i].val, true
		}
	}
	return value{}, false
}

// slot is get(key) for a slot key, i its slot.
func (a attrs) slot(i int, key string) (value, bool) {
	switch {
	case a.sv == nil:
		return a.get(key)
	case a.sv.ok[i]:
		return a.sv.v[i], true
	case a.rv.ok[i]:
		return a.rv.v[i], true
	}
	return value{}, false
}

// text renders an attribute value as a dimension value would read it
// (lists, maps and bytes as nothing).
func text(v value) string {
	switch v.typ {
	case valStr:
		return v.str()
	case valInt:
		return strconv.FormatInt(v.int(), 10)
	case valDouble:
		return strconv.FormatFloat(v.double(), 'f', -1, 64)
	case valBool:
		return strconv.FormatBool(v.bool())
	}
	return ""
}

// appendField appends what add appends, preceded by its length (4 bytes).
func appendField(b []byte, add func([]byte) []byte) []byte {
	n := len(b)
	b = add(append(b, 0, 0, 0, 0))
	binary.LittleEndian.PutUint32(b[n:], uint32(len(b)-n-4))
	return b
}

// appendText appends text(v) to b.
func appendText(b []byte, v value) []byte {
	switch v.typ {
	case valStr:
		return append(b, v.str()...)
	case valInt:
		return strconv.AppendInt(b, v.int(), 10)
	case valDouble:
		return strconv.AppendFloat(b, v.double(), 'f', -1, 64)
	case valBool:
		return strconv.AppendBool(b, v.bool())
	}
	return b
}

// number reads an attribute as a number (numbers sent as text too).
func number(v value) (float64, bool) {
	switch v.typ {
	case valInt:
		return float64(v.int()), true
	case valDouble:
		f := v.double()
		return f, !math.IsNaN(f) && !math.IsInf(f, 0)
	case valStr:
		f, err := strconv.ParseFloat(v.str(), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// kindNames are the span kinds as rules name them ("" for unspecified),
// by the kind's number: an array, not a map, as it is read per span.
var kindNames = [...]string{1: "internal", kindServer: "server", kindClient: "client", 4: "producer", 5: "consumer"}

// kindName is the kind as rules name it; "" for unspecified or unknown.
func kindName(k int32) string {
	if k < 0 || int(k) >= len(kindNames) {
		return ""
	}
	return kindNames[k]
}

// resolve fills dst from an OTLP span (already checked) and its resource.
func (m *mapper) resolve(dst *span, sp *wireSpan, req *decoded, res *resDims) {
	a := attrs{span: req.attrs(sp.attrs), res: res.attrs, sv: &m.spanVals, rv: &res.slots, keys: &m.keyTab}
	dst.id, dst.parent, dst.res = sp.id, sp.parent, res.id
	dst.start, dst.end = int64(sp.start), int64(sp.end)
	name := sp.name
	// The span's attributes, read once: its dimensions (each dimension's
	// first listed key present with a value; for the same key, the span's
	// attribute before the resource's, and for spanDim's any of the
	// span's) and the slot keys.
	var prio [numDims]int
	var d [numDims]string
	own := m.readAttrs(a.span, &d, &prio, a.sv)
	vd := m.verdict(name, kindName(sp.kind), a)
	dst.stageLeaf, dst.stageInner, dst.name = vd.leaf, vd.inner, vd.name
	dst.client = sp.kind == kindClient
	// At most one time per stage: gathered here, then allocated once
	// (appending grew the slice twice for vLLM's two).
	var have [correlate.NumStages]bool
	var extra [correlate.NumStages]timed
	nextra := 0
	for i, as := range m.cfg.AttrStages {
		if have[as.Stage] {
			continue
		}
		v, ok := a.slot(m.stageSlot[i], as.Attr)
		if !ok {
			continue
		}
		if f, ok := number(v); ok && f >= 0 {
			have[as.Stage] = true
			extra[nextra] = timed{as.Stage, f * as.Scale}
			nextra++
		}
	}
	if nextra > 0 {
		dst.extra = append([]timed(nil), extra[:nextra]...)
	}
	for i, slots := range m.tokenSlot {
		dst.tokens[i] = 0
		for p, s := range slots {
			v, ok := a.slot(s, m.tokenKey[i][p])
			if !ok {
				continue
			}
			if f, ok := number(v); ok && f >= 1 && f <= correlate.MaxTokens {
				dst.tokens[i] = int32(f)
				break
			}
		}
	}
	if len(m.eventNames) > 0 {
		for _, ev := range req.events[sp.events.lo:sp.events.hi] {
			if m.eventNames[ev.name] {
				if len(dst.events) == maxSpanEvents {
					break // a stage needs two; more is a runaway span, not more timing
				}
				dst.events = append(dst.events, event{m.text(ev.name), int64(ev.at)})
			}
		}
	}
	if !own {
		if res.shared == nil {
			res.shared = m.dimSet(&res.val)
		}
		dst.dims = res.shared
	} else {
		for i := range d {
			if res.prio[i] < prio[i] && (prio[i] == noPrio || !spanDim[i]) {
				d[i] = res.val[i]
			}
		}
		dst.dims = m.dimSet(&d)
	}
	// OTLP's span flags: bit 8 says whether bit 9 (the parent is remote)
	// is known; SDKs set both (otel-go since 1.28).
	fl := sp.flags
	dst.parentLocal = fl&0x100 != 0 && fl&0x200 == 0 && dst.parent != [8]byte{}
	// Without the flags (Envoy, Kong, nginx-otel and Triton fill spans
	// themselves; SDKs before 2024), a SERVER span's parent is remote by
	// what a server span is: the caller's, in another process. Such a
	// span waited MaxWait (a minute) for a root that was never coming.
	dst.parentRemote = dst.parent != [8]byte{} &&
		(fl&0x300 == 0x300 || (fl&0x100 == 0 && sp.kind == kindServer))
	dst.failed = sp.status == statusError
	if v, ok := a.slot(m.errSlot, "error.type"); ok {
		dst.timedOut = strings.Contains(strings.ToLower(text(v)), "timeout")
	}
	if dst.failed {
		if msg := strings.ToLower(sp.statusMsg); strings.Contains(msg, "timeout") || strings.Contains(msg, "deadline") {
			dst.timedOut = true
		}
	}
}

// valueText is m.text(text(v)), cut by bare if bareURL. A number is
// formatted on the stack: its text (a status code, a sample rate) is
// allocated only when new to intern, not per span.
func (m *mapper) valueText(v value, bareURL bool) string {
	if v.typ == valStr {
		t := v.str()
		if bareURL {
			t = bare(t)
		}
		if t == "" {
			return ""
		}
		return m.text(t)
	}
	switch v.typ {
	case valInt, valDouble, valBool:
	default:
		return "" // bytes, lists and maps read as nothing
	}
	bits := v.n
	n := &m.numTexts[(bits^bits>>17^bits>>40^uint64(v.typ)<<5)%uint64(len(m.numTexts))]
	if n.ok && n.typ == v.typ && n.bits == bits {
		return n.s
	}
	var buf [32]byte
	b := appendText(buf[:0], v) // no '?' or '#' for bare to cut
	s, ok := m.intern[string(b)]
	if !ok {
		s = m.text(string(b))
	}
	*n = numText{true, v.typ, bits, s}
	return s
}

// numText is a number's text as valueText gives it.
type numText struct {
	ok   bool
	typ  valueType
	bits uint64
	s    string
}

// setKey is a set of dimension values by where their bytes are and how
// many: the values come from intern, so equal sets share them (short of
// a full intern, when equal sets may just not be shared). The map hashes
// it as one block of memory; hashing ten strings' contents was a fifth
// of the mapping of spans with dimensions of their own. A set in dimSets
// holds its values, so an address there is never another value's.
type setKey [numDims]struct {
	p *byte
	n int
}

// recentSet is a set in dimSet's cache, with the hash it was found by:
// another set in its place is told apart without comparing ten strings.
type recentSet struct {
	h  uintptr
	ds *[numDims]string
}

// dimSet returns the shared set holding d's values.
func (m *mapper) dimSet(d *[numDims]string) *[numDims]string {
	var h uintptr
	for _, v := range d {
		h = h*31 + uintptr(unsafe.Pointer(unsafe.StringData(v))) + uintptr(len(v))
	}
	slot := &m.recentSets[(h>>4^h>>10)%uintptr(len(m.recentSets))]
	if slot.ds != nil && slot.h == h && *slot.ds == *d {
		return slot.ds
	}
	var k setKey
	for i, v := range d {
		if v != "" { // an empty value's address is anything
			k[i].p, k[i].n = unsafe.StringData(v), len(v)
		}
	}
	if ds := m.dimSets[k]; ds != nil {
		*slot = recentSet{h, ds}
		return ds
	}
	if len(m.dimSets) >= maxDimSets {
		clear(m.dimSets)
	}
	ds := new([numDims]string)
	*ds = *d
	m.dimSets[k] = ds
	*slot = recentSet{h, ds}
	return ds
}

// matches reports whether the rule holds for a span (Leaf aside).
func (r *Rule) matches(name, kind string, a attrs) bool {
	if r.Kind != "" && r.Kind != kind {
		return false
	}
	if r.Name != nil && !r.Name.MatchString(name) {
		return false
	}
	if r.Except != nil && r.Except.MatchString(name) {
		return false
	}
	for k, re := range r.Attrs {
		v, ok := a.get(k)
		if !ok || !re.MatchString(text(v)) {
			return false
		}
	}
	return true
}

// text returns v cut to a label's length, without NULs (Postgres text
// holds none) or invalid UTF-8, shared with earlier spans that had the
// same value.
func (m *mapper) text(v string) string {
	if s, ok := m.intern[v]; ok {
		return s
	}
	// The decoder does not check UTF-8 (pdata, like the Collector), and
	// the store's text is UTF-8: one bad value would fail every retry of
	// its batch. Invalid bytes become U+FFFD, before the cut to a label's
	// length.
	s := strings.ToValidUTF8(v, "\uFFFD")
	if len(s) > maxDimLen {
		cut := maxDimLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.Clone(s) // not a view into the request's buffer
	// Bounded: at most 65,536 values of at most 1 KB, a few MB. The key
	// is a copy too: v is a view into a request's body, which is reused.
	if len(m.intern) < 1<<16 && len(v) <= 4*maxDimLen {
		key := s
		if key != v {
			key = strings.Clone(v)
		}
		m.intern[key] = s
	}
	return s
}
