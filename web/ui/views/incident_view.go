package views

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// IncidentPage is the incident permalink: the header, the ranked causes,
// the checklist, stage attribution and the filterable region (timeline,
// concentration, samples).
type IncidentPage struct {
	ID       int64
	Base     string // /incidents/5 or /s/{token}
	ReadOnly bool   // share link: no buttons that change anything
	CanWrite bool   // signed in with write scope
	Header   IncidentHeader
	Causes   []CauseView
	Ruled    []string // categories scored 0.05 or less (or not listed at all)
	Unjudged []string // categories not assessable, with the reason
	Coverage string   // what data the analysis had, one sentence
	Check    []CheckStep
	Stages   StagesView
	Aligned  []AlignedRow
	// AlignedEmpty is what the changes card says with no row.
	AlignedEmpty string
	Filtered     Filtered
	Share        ShareBox
	ExportMD     string // export link; "" on share pages
	// ShareExport is the share page's own export link ("" elsewhere).
	ShareExport string
	CSRF        string // for the page's forms
}

// IncidentHeader is the top of the page.
type IncidentHeader struct {
	Title, Status  string
	Opened         string // "opened manually", "opened by Alertmanager", "opened by the detector"
	Named          string // the incident's own title, when the headline replaces it
	Model          string // the headline model (hit hardest)
	Scope          string // the analysis' scope sentence, or the incident's scope
	Reconciliation string // why the concentration and the top cause do not disagree
	Window         string
	Onset          string
	Impact         []ImpactView // per affected model, hardest hit first
	MoreModels     int          // affected models not listed
	Slow           SlowCount    // the incident's one count of slow requests
	HasSlow        bool
	// P99 is "100 ms → 900 ms" for an analysis stored before the impact
	// block existed (no Impact): its headline model's before and during.
	P99      string
	Analysis AnalysisState
	Snapshot string // "frozen 2026-…": the page reads a snapshot
	LiveHref string // the same view from live data, when a snapshot is shown
	// FrozenHref: the page shows live data past its snapshot; this is the
	// same view from the snapshot.
	FrozenHref string
}

// AnalysisState says how current the analysis is.
type AnalysisState struct {
	Status  string // ready, pending, failed, none
	Version int
	// Age is when the version shown was computed: its clock time, and
	// (AgeAt, AgeNow) how long before the page was made, in a <time
	// data-ago> that app.js moves on while the page stays open (data-now
	// is the server's clock, so a browser's clock that is off does not
	// matter).
	Age           string
	AgeAt, AgeNow time.Time
	Recomputing   bool
	Error         string
	PollURL       string // fragment polled while pending, or failed but tried again
	// Held: pending, but not polled, since the poll ends in a reload and
	// the page shows a share link that is shown only once.
	Held bool
	// Quiet: the poll shows nothing until a newer version is ready (an
	// open incident's page); Newer is that version, offered, not loaded.
	Quiet bool
	Newer int
}

// CauseView is one ranked hypothesis.
type CauseView struct {
	Rank              int
	Category, Label   string
	ScorePct          float64
	Score             string
	Summary           string
	Targets           []Link
	Evidence, Counter []EvidenceView
	Actions           []string
	Pool              []PoolFact // capacity and cold start: the replicas and the autoscaler the actions act on
	Open              bool
}

// EvidenceView is one measured fact.
type EvidenceView struct {
	Summary, Value string // Value: how strongly it counts, in words
	Name           string // the item's identifier, for the curious
	StrengthPct    float64
}

// CheckStep is one step of the article's checklist.
type CheckStep struct {
	Step, Title, Anchor string
	Key                 string // the step in one line: its key fact
	Answer              string // the analysis' full answer, one click away ("" when Key says it all)
	Row, RowHref        string // the concentration row the samples step quotes, and its filter link
	RowGet              string // … its htmx request, with the window of the region as it is (Link.Get)
}

// StagesView is the stage attribution: typical stage time of slow
// requests before vs during, the delta with its interval, the share.
type StagesView struct {
	Source string // "from request samples" / "from stage-time curves"
	Rows   []StageRow
	Empty  string
}

// StageRow is one stage.
type StageRow struct {
	Stage                 string
	Before, During, Delta string
	Interval, Share       string
	BeforePct, DuringPct  float64
	SharePct              float64
	Top                   bool
}

// AlignedRow is an event the analysis weighed.
type AlignedRow struct {
	Offset, Kind, Scope, Summary, Weight string
}

// ShareBox is the sharing panel.
type ShareBox struct {
	URL   string // the link, only in the answer that made it ("" otherwise: only its hash is kept)
	Since string // when the current link was made; "" when not shared
	// Webhooks says which live links webhooks' deliveries carry ("" none).
	Webhooks string
	Snapshot string // when a snapshot exists
}

// IncidentInput is what BuildIncident needs.
type IncidentInput struct {
	Incident    store.Incident
	Analysis    *correlate.Analysis // nil when none is ready
	Status      string              // newest analysis status: ready, pending, failed or ""
	Version     int
	ComputedAt  time.Time
	Recomputing bool
	Error       string
	SnapshotAt  *time.Time
	ShareURL    string     // a link just made (shown once)
	SharedAt    *time.Time // when the incident's current link was made; nil when not shared
	// WebhookShares counts the live links webhooks' deliveries carry.
	WebhookShares int
	State         State
	ReadOnly      bool
	CanWrite      bool
	Now           time.Time
}

// BuildIncident builds everything but the Filtered region.
func BuildIncident(in IncidentInput) IncidentPage {
	inc := in.Incident
	p := IncidentPage{ID: inc.ID, Base: in.State.Base, ReadOnly: in.ReadOnly, CanWrite: in.CanWrite && !in.ReadOnly}
	if !in.ReadOnly {
		p.ExportMD = in.State.Base + "/export.md"
	} else {
		p.ShareExport = in.State.Base + "/export.md"
	}
	h := IncidentHeader{Title: inc.Title, Status: inc.Status, Opened: correlate.OpenedBy(inc.Source), Scope: inc.Scope.String()}
	if h.Scope == "" {
		h.Scope = "whole fleet"
	}
	end := in.Now
	if inc.End != nil {
		end = *inc.End
	}
	h.Window = FmtTime(inc.Start, time.Time{}) + " – " + FmtTime(end, inc.Start)
	if inc.End == nil {
		h.Window = FmtTime(inc.Start, time.Time{}) + " – ongoing"
	}
	st := AnalysisState{Status: in.Status, Version: in.Version, Recomputing: in.Recomputing, Error: in.Error}
	if in.ReadOnly {
		// A share link says that the analysis failed, not why: the reason
		// is the analyzer's error (a database's host and user, a statement
		// timeout), the installation's and not the incident's.
		st.Error = ""
	}
	if st.Status == "" {
		st.Status = "none"
	}
	if !in.ComputedAt.IsZero() {
		// The clock time first, then how long ago: the page is not
		// re-rendered while it is open, so the browser moves that on
		// (app.js); "just now" would still say so an hour later.
		st.Age, st.AgeAt, st.AgeNow = FmtTime(in.ComputedAt, in.Now), in.ComputedAt, in.Now
	}
	shown := 0
	if in.Analysis != nil {
		shown = in.Version
	}
	poll := in.State.Base + "/status?shown=" + strconv.Itoa(shown)
	// A share page polls too (/s/{token}/status): a link pasted into the
	// incident channel is often opened before the analysis is ready.
	switch {
	case st.Status == "pending" || st.Status == "none" || st.Recomputing:
		st.PollURL = poll
		if in.ShareURL != "" {
			st.PollURL, st.Held = "", true
		}
	case st.Status == "ready" && inc.Status == store.IncidentOpen:
		// An open incident is re-analysed as data comes in: say when a
		// newer version is ready, without reloading under the reader.
		st.PollURL, st.Quiet = poll, true
	case st.Status == "failed" && (inc.Status == store.IncidentOpen || shown == 0):
		// The analyzer tries again — an open incident at every refresh,
		// a resolved one without a ready version a few minutes later —
		// and a later attempt usually succeeds (the failure was a
		// database blip, a timeout): keep watching for it, more slowly
		// than while an attempt runs. With nothing shown, a success
		// reloads the page: not while a new share link is shown once.
		if shown > 0 || in.ShareURL == "" {
			st.PollURL = poll
		}
	}
	h.Analysis = st
	if in.SnapshotAt != nil {
		h.Snapshot = "Frozen copy taken " + FmtTime(*in.SnapshotAt, time.Time{})
		switch {
		case in.ReadOnly:
		case in.State.Live:
			frozen := in.State
			frozen.Live = false
			h.FrozenHref = frozen.URL()
		default:
			live := in.State
			live.Live = true
			h.LiveHref = live.URL()
		}
		p.Share.Snapshot = h.Snapshot
	}
	p.Share.URL = in.ShareURL
	if n := in.WebhookShares; n > 0 {
		p.Share.Webhooks = "The deliveries of " + webhooksWord(n) + " carry read-only links to this incident: whoever receives them can open it."
	}
	if in.SharedAt != nil {
		p.Share.Since = FmtTime(*in.SharedAt, time.Time{})
	}
	a := in.Analysis
	if a != nil {
		if a.Scope.Summary != "" {
			h.Scope = a.Scope.Summary
		}
		if a.Onset != nil {
			h.Onset = onsetWhen(a)
		}
		if a.Headline.Title != "" {
			h.Title, h.Model = a.Headline.Title, a.Headline.Model
			if inc.Title != "" && inc.Title != h.Title {
				h.Named = inc.Title
			}
		}
		h.Reconciliation = a.Reconciliation
		stale := in.Now // an open incident says when its data stops
		if inc.Status != store.IncidentOpen {
			stale = time.Time{}
		}
		h.Impact = impactViews(a, in.State, stale)
		if len(h.Impact) == 0 && (a.P99BeforeMs > 0 || a.P99DuringMs > 0) {
			h.P99 = FmtMs(a.P99BeforeMs) + " → " + FmtMs(a.P99DuringMs)
		}
		h.MoreModels = len(a.Impact) - len(h.Impact)
		if a.Samples.SlowRequests > 0 {
			h.Slow, h.HasSlow = slowTotal(a, func(m string) string { return m }), true
		}
		p.Causes = causeViews(a, in.State)
		if len(a.Impact) > 0 {
			// With no judged rise every cause scores 0 for want of
			// anything to explain: none was ruled out by the data.
			p.Ruled = ruledOut(a.Causes, a.NotAssessable)
		}
		for _, n := range a.NotAssessable {
			p.Unjudged = append(p.Unjudged, CategoryLabel(string(n.Category))+" — "+n.Reason)
		}
		p.Coverage = a.Coverage.Summary
		p.Check = storyChecklist(a, in.State)
		p.Stages = stagesView(a.Stages, a.StageSource)
		p.Aligned = alignedRows(a.Events)
		p.AlignedEmpty = "No change event from an hour before the onset to the end of the window."
	} else {
		p.Stages.Empty = "No analysis yet."
		p.AlignedEmpty = "No analysis yet: the changes near the onset are listed once it is ready."
	}
	p.Header = h
	return p
}

// webhooksWord is "one webhook" or "N webhooks".
func webhooksWord(n int) string {
	if n == 1 {
		return "one webhook"
	}
	return strconv.Itoa(n) + " webhooks"
}

// causeViews ranks the causes (already sorted by score) for display; the
// top one is open, the rest collapsed.
func causeViews(a *correlate.Analysis, s State) []CauseView {
	out := make([]CauseView, 0, len(a.Causes))
	for i, c := range a.Causes {
		v := CauseView{Rank: i + 1, Category: string(c.Category), Label: CategoryLabel(string(c.Category)),
			ScorePct: pct(c.Score), Score: strconv.FormatFloat(c.Score, 'f', 2, 64), Summary: c.Summary,
			Actions: c.Actions, Open: i == 0, Targets: targetLinks(c.Target, s), Pool: PoolFacts(a, c)}
		if c.Category == correlate.CatUnexplained {
			// Its score is the best cause's shortfall, not a likelihood:
			// a full bar would read as confidence in a cause.
			v.Score, v.ScorePct = "", 0
		}
		for _, e := range c.Evidence {
			v.Evidence = append(v.Evidence, evidenceView(e))
		}
		for _, e := range c.CounterEvidence {
			v.Counter = append(v.Counter, evidenceView(e))
		}
		out = append(out, v)
	}
	return out
}

func evidenceView(e correlate.Evidence) EvidenceView {
	w := "weak"
	switch {
	case e.Strength >= 0.7:
		w = "strong"
	case e.Strength >= 0.4:
		w = "moderate"
	}
	return EvidenceView{Summary: e.Summary, Value: w, Name: e.Name, StrengthPct: pct(e.Strength)}
}

// targetLinks turns a cause's target into links that filter the page: the
// target as a whole (model+version, a replica, a node), then each of its
// listed replicas and models.
func targetLinks(t correlate.Target, s State) []Link {
	var out []Link
	main := map[string]string{}
	for _, kv := range []KV{{"model", t.Model}, {"version", t.Version}, {"tenant", t.Tenant}, {"replica", t.Replica}, {"node", t.Node}} {
		if kv.V != "" {
			main[kv.K] = kv.V
		}
	}
	if len(main) > 0 {
		out = append(out, filterLink(main, s))
	}
	for _, r := range t.Replicas {
		if r != t.Replica {
			out = append(out, filterLink(map[string]string{"replica": r}, s))
		}
	}
	for _, m := range t.Models {
		if m != t.Model {
			out = append(out, filterLink(map[string]string{"model": m}, s))
		}
	}
	return out
}

func filterLink(dims map[string]string, s State) Link {
	return Link{Text: DimsKey(dims), Href: s.WithFilters(dims).URL(), Get: s.WithoutWindow().WithFilters(dims).URL(),
		Current: DimsKey(s.WithFilters(dims).Dims()) == DimsKey(s.Dims())}
}

// ruledOut lists the categories the analysis found nothing for, so the
// page says what was considered and dismissed; categories it could not
// assess are not "ruled out" and are listed apart.
func ruledOut(causes []correlate.Cause, na []correlate.NotAssessable) []string {
	seen := map[correlate.Category]bool{}
	for _, c := range causes {
		if c.Score > 0.05 {
			seen[c.Category] = true
		}
	}
	for _, n := range na {
		seen[n.Category] = true
	}
	var out []string
	for _, c := range correlate.Categories {
		if !seen[c] {
			out = append(out, CategoryLabel(string(c)))
		}
	}
	return out
}

var checkTitles = map[string][2]string{
	"scope":    {"Scope", "#causes"},
	"timeline": {"Timeline", "#timeline"},
	"samples":  {"Samples", "#samples"},
	"action":   {"Action", "#causes"},
}

func stagesView(stages []correlate.StageShare, source string) StagesView {
	v := StagesView{}
	switch source {
	case "samples":
		v.Source = "Typical time of slow requests per stage, from request samples; the interval is 95% (normal approximation over the weighted samples)."
	case "curves":
		v.Source = "Mean time of all requests per stage, from stage-time curves (no samples, so no interval)."
	}
	if len(stages) == 0 {
		v.Empty = "No stage data: send samples with stages_ms, or export inference_stage_duration_seconds."
		return v
	}
	top, scale := -1, 0.0
	for i, s := range stages {
		scale = math.Max(scale, math.Max(s.BeforeMs, s.DuringMs))
		if top < 0 || s.Share > stages[top].Share {
			top = i
		}
	}
	if scale <= 0 {
		scale = 1
	}
	for i, s := range stages {
		if s.BeforeMs <= 0 && s.DuringMs <= 0 {
			// A server that does not time a stage reports 0 throughout:
			// not measured, not "unchanged".
			v.Rows = append(v.Rows, StageRow{Stage: s.Stage, Before: "not timed", During: "not timed", Delta: "–", Interval: "–", Share: "–"})
			continue
		}
		d := FmtMs(s.DeltaMs)
		if s.DeltaMs > 0 {
			d = "+" + d
		}
		interval := FmtIntervalMs(s.DeltaLoMs, s.DeltaHiMs)
		if source != "samples" || s.DeltaLoMs == s.DeltaHiMs {
			interval = "–" // curves are means: no interval to give
		}
		v.Rows = append(v.Rows, StageRow{Stage: s.Stage, Before: FmtMs(s.BeforeMs), During: FmtMs(s.DuringMs), Delta: d,
			Interval: interval, Share: FmtPct(100 * s.Share),
			BeforePct: pct(s.BeforeMs / scale), DuringPct: pct(s.DuringMs / scale), SharePct: pct(s.Share), Top: i == top && s.Share > 0})
	}
	return v
}

// alignedRows lists the events the analysis weighed, strongest first, at
// most twelve.
func alignedRows(evs []correlate.AlignedEvent) []AlignedRow {
	sorted := append([]correlate.AlignedEvent(nil), evs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].TimeWeight*sorted[i].ScopeMatch > sorted[j].TimeWeight*sorted[j].ScopeMatch
	})
	var out []AlignedRow
	for i, e := range sorted {
		if i == 12 {
			break
		}
		off := FmtDuration(time.Duration(math.Abs(e.OffsetS)) * time.Second)
		if e.OffsetS < 0 {
			off += " before onset"
		} else {
			off += " after onset"
		}
		out = append(out, AlignedRow{Offset: off, Kind: string(e.Kind), Scope: e.Scope.String(), Summary: e.Summary,
			Weight: strconv.FormatFloat(e.TimeWeight*e.ScopeMatch, 'f', 2, 64)})
	}
	return out
}

// Filtered is the region a filter or a zoom reloads: the timeline, the
// concentration table and the sample table.
type Filtered struct {
	Base  string
	Lazy  string     // when set, the region is loaded from this URL once scrolled into view
	Whole string     // … and without script, its link leads to the whole page here
	Retry *LazyRetry // the lazy region's last load failed; it is tried again
	// Window is the view's from/to (those set), kept in the region as
	// hidden inputs (#view-window) that the links above the region send
	// with their request (Link.Get): they were rendered with the page's
	// window at load time, and a zoom since swaps only this region.
	Window   []KV
	Chips    []Link // active filters; each link removes its filter
	Clear    string
	Timeline Timeline
	Conc     ConcTable
	Heat     *Heatmap // nil where the page has none (the explorer)
	Samples  SampleTable
}

// WindowOf is s's window as Filtered.Window.
func WindowOf(s State) []KV {
	var out []KV
	q := s.Query()
	for _, k := range []string{"from", "to"} {
		if v := q.Get(k); v != "" {
			out = append(out, KV{k, v})
		}
	}
	return out
}

// LazyRetry is why the lazy region's load failed and when it is tried
// again: after 2 s, then twice as long each time, up to a minute.
type LazyRetry struct {
	Status int
	Msg    string
	Failed int // loads failed in a row
	Delay  string
}

// NewLazyRetry is the retry after failed loads in a row.
func NewLazyRetry(status int, msg string, failed int) *LazyRetry {
	failed = max(failed, 1)
	d := 60
	if failed <= 5 {
		d = min(2<<(failed-1), 60)
	}
	return &LazyRetry{Status: status, Msg: msg, Failed: failed, Delay: strconv.Itoa(d) + "s"}
}

// lazyTrigger: the region loads when scrolled into view; after a failure,
// by itself once its delay is over (and on "wl-retry", which the page's
// script sends when the request never reached the server).
func lazyTrigger(f Filtered) string {
	if f.Retry != nil {
		return "load delay:" + f.Retry.Delay + ", wl-retry"
	}
	return "revealed, wl-retry"
}

// LazyHeader carries how many loads of the lazy region failed in a row,
// so that an error answer to it can be the region itself, with a retry.
const LazyHeader = "X-Waterline-Lazy"

func lazyHeaders(f Filtered) string {
	n := 0
	if f.Retry != nil {
		n = f.Retry.Failed
	}
	return `{"` + LazyHeader + `":"` + strconv.Itoa(n) + `"}`
}

// ConcTable is the BubbleUp-style table.
type ConcTable struct {
	Rows  []ConcRow
	Empty string
}

// ConcRow is one over-represented dimension value (or pair).
type ConcRow struct {
	Key                string // "replica=r-7 · node=n-3"
	Row                string // DimsKey of the row's own dimensions: the checklist names rows by it
	Href               string // filters the page to it
	Title              string // what the link filters to, when not the row's own dimensions
	Selected           bool
	Sel, Base          string
	SelPct, BasePct    float64
	RiskRatio, Support string
	Tail, TailTitle    string // share of the P99's rise it explains; the samples' own P99s in the title
}

// BuildConc builds the concentration table; a click on a row filters
// samples and timeline to it (every row: see concHref), a click on the
// selected row clears it. a gives the replicas a replica_age row stands
// for; nil is fine.
func BuildConc(rows []correlate.Concentration, s State, a *correlate.Analysis) ConcTable {
	t := ConcTable{}
	if len(rows) == 0 {
		t.Empty = "No analysis yet: where slow requests concentrate is worked out with it."
		if a != nil {
			t.Empty = correlate.NoConcentration(a.Samples.Slow, a.Samples.During)
		}
		return t
	}
	for _, r := range rows {
		key := DimsKey(r.Dims)
		row := ConcRow{Key: key, Row: key, Sel: FmtPct(r.SelectionPct), Base: FmtPct(r.BaselinePct),
			SelPct: math.Min(100, r.SelectionPct), BasePct: math.Min(100, r.BaselinePct),
			RiskRatio: "×" + FmtNum(r.RiskRatio), Support: FmtPct(100 * r.Support), Tail: "—"}
		if len(r.Also) > 0 && r.Label != "" {
			row.Key = r.Label // rows selecting the same requests, folded into one
		}
		// A share, not the samples' P99 in ms: that is the P99 of the
		// sampled requests over the whole spike, another figure than the
		// header's P99 curve, and the two read as a contradiction.
		if r.TailShare > 0 {
			row.Tail = FmtPct(100 * r.TailShare)
		}
		if r.P99WithoutMs > 0 && r.P99Ms > 0 { // 0: nothing of its models' traffic would remain
			row.TailTitle = "In the request samples of " + strings.Join(r.Models, ", ") + " over the spike: P99 " + FmtMs(r.P99Ms) + ", " + FmtMs(r.P99WithoutMs) + " without these requests"
		}
		row.Href = concHref(r, a, s)
		if d := filterableDims(r.Dims); d != nil {
			row.Selected = s.FilteredTo(d)
		} else if d := concDims(r, a); d != nil {
			row.Title = "Filters to " + DimsKey(d) + ": the page cannot filter on " + strings.Join(unfilterable(r.Dims), ", ")
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// FilterChips lists the active filters as links that remove them. A
// filter the view puts back on every request (fixed: a share link's
// incident scope) is listed without a link, since removing it would do
// nothing; clear is "" when clearing would leave the view as it is (only
// the view's own scope is set).
func FilterChips(s State, fixed correlate.Scope) (chips []Link, clear string) {
	fx := State{Scope: fixed}.Dims()
	for _, kv := range s.FilterList() {
		if fx[kv.K] == kv.V {
			chips = append(chips, Link{Text: kv.K + "=" + kv.V, Title: "the incident's scope: this link shows no other"})
			continue
		}
		chips = append(chips, Link{Text: kv.K + "=" + kv.V, Href: s.Without(kv.K).URL()})
	}
	if len(chips) > 0 && DimsKey(s.WithFilters(fx).Dims()) != DimsKey(s.Dims()) {
		clear = s.WithFilters(nil).URL()
	}
	return chips, clear
}
