package correlate

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// dimension is one categorical column of the samples, dictionary-encoded
// so counting is array indexing rather than map lookups.
type dimension struct {
	name   string
	codes  []int32  // per row; -1 = no value
	values []string // code → value
}

// encodeDimension dictionary-encodes one string column over the given rows
// of an n-row table (other rows, and empty values, get -1).
func encodeDimension(name string, n int, rows []int32, get func(i int32) string) dimension {
	d := dimension{name: name, codes: make([]int32, n)}
	for i := range d.codes {
		d.codes[i] = -1
	}
	var idx smallIndex
	for _, i := range rows {
		if v := get(i); v != "" {
			d.codes[i] = int32(idx.get(v))
		}
	}
	d.values = idx.vals
	return d
}

// ConcentrationOptions tune Concentrate; zero fields take the defaults.
type ConcentrationOptions struct {
	MinSupport   float64 // share of slow weight a row must cover; default 0.05
	MinRiskRatio float64 // default 3 (MacroBase)
	PairGain     float64 // a pair must beat its best single item's RR by this factor; default 1.5
	Top          int     // rows returned; default 20
	Counterfact  int     // rows that get the "P99 without" computation; default 10
}

func (o ConcentrationOptions) withDefaults() ConcentrationOptions {
	if o.MinSupport <= 0 {
		o.MinSupport = 0.05
	}
	if o.MinRiskRatio <= 0 {
		o.MinRiskRatio = 3
	}
	if o.PairGain <= 0 {
		o.PairGain = 1.5
	}
	if o.Top <= 0 {
		o.Top = 20
	}
	if o.Counterfact <= 0 {
		o.Counterfact = 10
	}
	return o
}

// concTable is the input of concentrate: rows with a selection flag (slow),
// a weight (sample_rate) and the latency used for the counterfactual P99.
type concTable struct {
	dims    []dimension
	slow    []bool
	weight  []float64
	latency []float64
	rows    []int32 // the rows taking part
}

// slowRows counts the slow samples taking part, whatever their weight.
func (t concTable) slowRows() int {
	n := 0
	for _, r := range t.rows {
		if t.slow[r] {
			n++
		}
	}
	return n
}

// hasAll reports whether row r has every item.
func (t concTable) hasAll(r int32, items []item) bool {
	for _, it := range items {
		if t.dims[it.dim].codes[r] != it.code {
			return false
		}
	}
	return true
}

// item is one dimension value: dimension index and code.
type item struct{ dim, code int32 }

type counts struct{ slow, total float64 }

// concentrate finds the dimension values and pairs over-represented among
// slow rows (MacroBase's risk ratio with a support floor, pairs only where
// they add information) and, for the strongest, the window P99 without
// them (Scorpion's counterfactual). All counts are weighted. It runs in
// three steps: single-attribute counts, pairs of frequent attributes, and
// the counterfactual ranking.
func concentrate(t concTable, opt ConcentrationOptions) []Concentration {
	opt = opt.withDefaults()
	if t.slowRows() < minSlowToJudge {
		return nil // a "concentration" of three slow samples is noise; NoConcentration says so
	}
	k := newConcCounts(t)
	if k.totSlow <= 0 || k.totAll <= k.totSlow {
		return nil
	}
	singles := k.singles(opt)
	k.pt = k.pairTable()
	cands := k.fold(singles, k.pairs(opt))
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].c.slow != cands[j].c.slow {
			return cands[i].c.slow > cands[j].c.slow
		}
		return cands[i].rr > cands[j].rr
	})
	return k.counterfactual(cands, opt)
}

// concCounts holds the weighted counts of one concentration table.
type concCounts struct {
	t               concTable
	totSlow, totAll float64
	half            float64    // Haldane's half request, in weight units
	single          [][]counts // per dimension, per code
	frequent        [][]bool   // items with enough support to pair
	pt              *pairTable // pairs of frequent items
}

// cand is a candidate row: one item or a pair, its counts and risk ratio,
// and the items of other dimensions that select exactly the same requests.
type cand struct {
	items []item
	also  []item
	c     counts
	rr    float64
}

// newConcCounts counts every dimension value (order 1) in one pass, dense
// per dimension.
func newConcCounts(t concTable) *concCounts {
	k := &concCounts{t: t, single: make([][]counts, len(t.dims))}
	for d := range t.dims {
		k.single[d] = make([]counts, len(t.dims[d].values))
	}
	for _, r := range t.rows {
		w, s := t.weight[r], t.slow[r]
		k.totAll += w
		if s {
			k.totSlow += w
		}
		for d := range t.dims {
			c := t.dims[d].codes[r]
			if c < 0 {
				continue
			}
			k.single[d][c].total += w
			if s {
				k.single[d][c].slow += w
			}
		}
	}
	if len(t.rows) > 0 {
		// Half a request added to each cell (Haldane's correction, in weight
		// units of an average row), so that "every slow request has it" is
		// a large, finite, comparable number rather than ∞.
		k.half = 0.5 * k.totAll / float64(len(t.rows))
	}
	return k
}

// rr is the risk ratio P(slow | in group) / P(slow | not in group).
func (k *concCounts) rr(c counts) float64 {
	restSlow, restAll := k.totSlow-c.slow, k.totAll-c.total
	return ((c.slow + k.half) / (c.total + 2*k.half)) / ((restSlow + k.half) / (restAll + 2*k.half))
}

// singles marks the frequent items and returns those whose risk ratio
// passes: step 1.
func (k *concCounts) singles(opt ConcentrationOptions) []cand {
	var out []cand
	k.frequent = make([][]bool, len(k.t.dims))
	for d := range k.t.dims {
		k.frequent[d] = make([]bool, len(k.single[d]))
		for code, c := range k.single[d] {
			// A value nearly every fast request has too (one version after
			// a full rollout, "warm" replicas) has nothing to contrast with.
			if c.total == 0 || c.slow/k.totSlow < opt.MinSupport || (c.total-c.slow) >= 0.9*(k.totAll-k.totSlow) {
				continue
			}
			k.frequent[d][code] = true
			if r := k.rr(c); r >= opt.MinRiskRatio {
				out = append(out, cand{items: []item{{int32(d), int32(code)}}, c: c, rr: r})
			}
		}
	}
	return out
}

// pairTable counts pairs of frequent items (Apriori pruning). At most
// 1/MinSupport values of a dimension can be frequent, so each pair of
// dimensions gets a small dense table indexed by compact codes.
type pairTable struct {
	compact   [][]int32 // dimension code → compact frequent code, or -1
	nfreq     []int
	freqCodes [][]int32 // compact code → dimension code
	tab       [][][]counts
}

func (k *concCounts) pairTable() *pairTable {
	nd := len(k.t.dims)
	p := &pairTable{compact: make([][]int32, nd), nfreq: make([]int, nd), tab: make([][][]counts, nd)}
	for d := 0; d < nd; d++ {
		p.compact[d] = make([]int32, len(k.single[d]))
		var fc []int32
		for code := range k.single[d] {
			p.compact[d][code] = -1
			if k.frequent[d][code] {
				p.compact[d][code] = int32(len(fc))
				fc = append(fc, int32(code))
			}
		}
		p.nfreq[d] = len(fc)
		p.freqCodes = append(p.freqCodes, fc)
	}
	for a := 0; a < nd; a++ {
		p.tab[a] = make([][]counts, nd)
		for b := a + 1; b < nd; b++ {
			if p.nfreq[a] > 0 && p.nfreq[b] > 0 {
				p.tab[a][b] = make([]counts, p.nfreq[a]*p.nfreq[b])
			}
		}
	}
	fcRow := make([]int32, nd)
	for _, r := range k.t.rows {
		w, s := k.t.weight[r], k.t.slow[r]
		for d := 0; d < nd; d++ {
			fcRow[d] = -1
			if c := k.t.dims[d].codes[r]; c >= 0 {
				fcRow[d] = p.compact[d][c]
			}
		}
		for a := 0; a < nd; a++ {
			if fcRow[a] < 0 {
				continue
			}
			base := int(fcRow[a])
			for b := a + 1; b < nd; b++ {
				if fcRow[b] < 0 {
					continue
				}
				pc := &p.tab[a][b][base*p.nfreq[b]+int(fcRow[b])]
				pc.total += w
				if s {
					pc.slow += w
				}
			}
		}
	}
	return p
}

// pairs returns the pairs of frequent items whose risk ratio beats both of
// their parts: step 2.
func (k *concCounts) pairs(opt ConcentrationOptions) []cand {
	p := k.pt
	var out []cand
	for a := range p.tab {
		for b := a + 1; b < len(p.tab); b++ {
			for i, c := range p.tab[a][b] {
				if c.total == 0 || c.slow/k.totSlow < opt.MinSupport {
					continue
				}
				ia := item{int32(a), p.freqCodes[a][i/p.nfreq[b]]}
				ib := item{int32(b), p.freqCodes[b][i%p.nfreq[b]]}
				r := k.rr(c)
				best := math.Max(k.rr(k.single[a][ia.code]), k.rr(k.single[b][ib.code]))
				if r >= opt.MinRiskRatio && r >= opt.PairGain*best {
					out = append(out, cand{items: []item{ia, ib}, c: c, rr: r})
				}
			}
		}
	}
	return out
}

// foldOrder ranks dimensions for naming a folded row: the most specific,
// most actionable name first (a version says more than the model it is
// the only version of).
var foldOrder = []string{"version", "replica", "node", "tenant", "model", "entry", "status", "batch_size", "replica_age",
	"dependency", "output_tokens", "input_tokens"}

func foldRank(name string) int {
	for i, n := range foldOrder {
		if n == name {
			return i
		}
	}
	return len(foldOrder)
}

// pairCount returns the counts of the requests having both items (both
// must be frequent), and whether the table has them.
func (k *concCounts) pairCount(a, b item) (counts, bool) {
	if a.dim > b.dim {
		a, b = b, a
	}
	p := k.pt
	ca, cb := p.compact[a.dim][a.code], p.compact[b.dim][b.code]
	if a.dim == b.dim || ca < 0 || cb < 0 || p.tab[a.dim][b.dim] == nil {
		return counts{}, false
	}
	return p.tab[a.dim][b.dim][int(ca)*p.nfreq[b.dim]+int(cb)], true
}

// sameRows reports whether two items select exactly the same requests:
// their pair has each one's whole weight (weights are positive, so equal
// sums mean equal sets).
func (k *concCounts) sameRows(a, b item) bool {
	pc, ok := k.pairCount(a, b)
	if !ok {
		return false
	}
	ca, cb := k.single[a.dim][a.code], k.single[b.dim][b.code]
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Max(x, y)) }
	return near(pc.total, ca.total) && near(pc.total, cb.total) && near(pc.slow, ca.slow) && near(pc.slow, cb.slow)
}

// fold merges co-linear rows: single items that select the same requests
// (version=v3.2.0, model=rerank-base and entry=/v1/rerank after a full
// rollout of one model) become one row named by the most specific item,
// the others kept as its equivalents; pairs are rewritten onto those
// names and deduplicated.
func (k *concCounts) fold(singles, pairs []cand) []cand {
	rep := make([]int, len(singles)) // union-find over singles
	for i := range rep {
		rep[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if rep[i] != i {
			rep[i] = find(rep[i])
		}
		return rep[i]
	}
	for i := range singles {
		for j := i + 1; j < len(singles); j++ {
			if k.sameRows(singles[i].items[0], singles[j].items[0]) {
				rep[find(j)] = find(i)
			}
		}
	}
	classes := map[int][]int{}
	var roots []int
	for i := range singles {
		r := find(i)
		if classes[r] == nil {
			roots = append(roots, r)
		}
		classes[r] = append(classes[r], i)
	}
	canon := map[item]item{}
	out := make([]cand, 0, len(roots)+len(pairs))
	for _, r := range roots {
		members := classes[r]
		sort.SliceStable(members, func(a, b int) bool {
			return foldRank(k.t.dims[singles[members[a]].items[0].dim].name) < foldRank(k.t.dims[singles[members[b]].items[0].dim].name)
		})
		c := singles[members[0]]
		for _, m := range members[1:] {
			c.also = append(c.also, singles[m].items[0])
		}
		for _, m := range members {
			canon[singles[m].items[0]] = c.items[0]
		}
		out = append(out, c)
	}
	seen := map[[2]item]bool{}
	for _, p := range pairs {
		a, b := p.items[0], p.items[1]
		if ca, ok := canon[a]; ok {
			a = ca
		}
		if cb, ok := canon[b]; ok {
			b = cb
		}
		if a.dim > b.dim || (a.dim == b.dim && a.code > b.code) {
			a, b = b, a
		}
		key := [2]item{a, b}
		if seen[key] {
			continue
		}
		seen[key] = true
		p.items = []item{a, b}
		out = append(out, p)
	}
	return out
}

// counterfactual computes, for the strongest candidates, the P99 without
// their requests and ranks the rows by influence: step 3. The rows are
// ordered by latency, slowest first, then walked once per candidate; only
// the tail is ever walked, so only the slowest rows are sorted (all of
// them if a walk runs past that head).
func (k *concCounts) counterfactual(cands []cand, opt ConcentrationOptions) []Concentration {
	t := k.t
	n := min(len(cands), opt.Top)
	out := make([]Concentration, n)
	scopes := map[string]*rowScope{}
	for i, c := range cands[:n] {
		row := Concentration{
			Dims:         map[string]string{},
			SelectionPct: 100 * c.c.slow / k.totSlow,
			BaselinePct:  100 * (c.c.total - c.c.slow) / (k.totAll - k.totSlow),
			RiskRatio:    c.rr,
			Support:      c.c.slow / k.totSlow,
			Count:        c.c.slow,
		}
		var names []string
		for _, it := range c.items {
			row.Dims[t.dims[it.dim].name] = t.dims[it.dim].values[it.code]
			names = append(names, t.dims[it.dim].name+"="+t.dims[it.dim].values[it.code])
		}
		row.Label = strings.Join(names, " & ")
		for _, it := range c.also {
			if row.Also == nil {
				row.Also = map[string]string{}
			}
			row.Also[t.dims[it.dim].name] = t.dims[it.dim].values[it.code]
			row.Label += " ≡ " + t.dims[it.dim].name + "=" + t.dims[it.dim].values[it.code]
		}
		sc := k.scopeOf(c.items, scopes, i < opt.Counterfact)
		row.Models = sc.models
		if i < opt.Counterfact {
			row.P99Ms = finite(sc.p99)
			row.P99WithoutMs = finite(tailQuantile(sc.order, t, func(r int32) bool { return t.hasAll(r, c.items) }))
			if row.P99WithoutMs > 0 {
				row.P99DeltaMs = finite(sc.p99 - row.P99WithoutMs)
			}
		}
		out[i] = row
	}
	// Rank by influence, Scorpion's counterfactual divided by a power of the
	// group's size: removing a whole node takes the bad replica's requests
	// with it and more, so the raw P99 drop would favour ever broader
	// groups; per √(share of requests) the culprit itself ranks first.
	infl := make([]float64, n)
	for i := range out {
		if out[i].P99DeltaMs > 0 && cands[i].c.total > 0 {
			infl[i] = out[i].P99DeltaMs / math.Sqrt(cands[i].c.total/k.totAll)
		}
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		i, j := idx[a], idx[b]
		if infl[i] != infl[j] {
			return infl[i] > infl[j]
		}
		return out[i].RiskRatio > out[j].RiskRatio
	})
	ranked := make([]Concentration, n)
	for r, i := range idx {
		ranked[r] = out[i]
	}
	return ranked
}

// rowScope is the traffic a row's counterfactual is computed in: the
// requests of the models the row's requests belong to. Removing version
// v2 of one model is judged against that model's P99, not against a
// window P99 that another model's slower requests set.
type rowScope struct {
	models []string
	order  *tailRows
	p99    float64
}

// scopeOf returns (and caches by model set) the scope of a row; its P99s
// only when withP99 (the walks cost more than the model set).
func (k *concCounts) scopeOf(items []item, cache map[string]*rowScope, withP99 bool) *rowScope {
	t := k.t
	md := -1
	for d := range t.dims {
		if t.dims[d].name == "model" {
			md = d
		}
	}
	var rows []int32
	var key string
	var models []string
	if md < 0 {
		rows = t.rows
	} else {
		in := map[int32]bool{}
		for _, r := range t.rows {
			if t.hasAll(r, items) {
				in[t.dims[md].codes[r]] = true
			}
		}
		codes := make([]int32, 0, len(in))
		for c := range in {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		for _, c := range codes {
			key += strconv.Itoa(int(c)) + ","
			if c >= 0 {
				models = append(models, t.dims[md].values[c])
			}
		}
		if sc := cache[key]; sc != nil && (sc.order != nil || !withP99) {
			return sc
		}
		if !withP99 || len(in) == len(t.dims[md].values) {
			rows = t.rows
		} else {
			for _, r := range t.rows {
				if in[t.dims[md].codes[r]] {
					rows = append(rows, r)
				}
			}
		}
	}
	sort.Strings(models)
	sc := &rowScope{models: models}
	if withP99 {
		sc.order = slowestFirst(t, rows, 0.05)
		sc.p99 = tailQuantile(sc.order, t, nil)
	}
	cache[key] = sc
	return sc
}

// tailRows is a latency-ordered head of the rows (slowest first) and, for
// walks that go past it, the full ordering made on demand.
type tailRows struct {
	head []int32
	all  []int32 // nil until needed
	rows []int32
	t    concTable
}

// slowestFirst orders the slowest share of rows (by a sampled cut-off).
func slowestFirst(t concTable, rows []int32, share float64) *tailRows {
	tr := &tailRows{rows: rows, t: t}
	if len(rows) == 0 {
		return tr
	}
	stride := max(1, len(rows)/20000)
	var probe []float64
	for i := 0; i < len(rows); i += stride {
		probe = append(probe, t.latency[rows[i]])
	}
	cut := quantile(probe, 1-share)
	for _, r := range rows {
		if t.latency[r] >= cut {
			tr.head = append(tr.head, r)
		}
	}
	sortByLatency(tr.head, t.latency)
	return tr
}

func sortByLatency(rows []int32, lat []float64) {
	slices.SortFunc(rows, func(a, b int32) int { return cmp.Compare(lat[b], lat[a]) })
}

// tailQuantile returns the weighted P99 of the rows, skipping those for
// which exclude is true.
func tailQuantile(tr *tailRows, t concTable, exclude func(int32) bool) float64 {
	var total float64
	for _, r := range tr.rows {
		if exclude == nil || !exclude(r) {
			total += t.weight[r]
		}
	}
	if total <= 0 {
		return math.NaN()
	}
	target := 0.01 * total
	walk := func(order []int32) (float64, bool) {
		var cum float64
		for _, r := range order {
			if exclude != nil && exclude(r) {
				continue
			}
			cum += t.weight[r]
			if cum >= target {
				return t.latency[r], true
			}
		}
		return 0, false
	}
	if v, ok := walk(tr.head); ok {
		return v
	}
	if tr.all == nil {
		tr.all = append([]int32(nil), tr.rows...)
		sortByLatency(tr.all, t.latency)
	}
	v, _ := walk(tr.all)
	return v
}

// value returns the row's value for dim, from its own dimensions or the
// equivalent ones folded into it.
func (c Concentration) value(dim string) (string, bool) {
	if v, ok := c.Dims[dim]; ok {
		return v, true
	}
	v, ok := c.Also[dim]
	return v, ok
}
