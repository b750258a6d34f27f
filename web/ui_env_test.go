package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web"
)

// uiEnv is a server with one incident around a seeded latency spike:
// curves (seedCurves), samples of two tenants on two replicas, and a
// stored analysis, so every page and fragment has something to show.
type uiEnv struct {
	*apiEnv
	id      int64
	spikeAt time.Time
	from    time.Time // incident start
	to      time.Time // incident end
}

// Tenant names the data uses; tests check they never reach an unfurl.
const (
	tenantA = "t-acme"
	tenantB = "t-globex"
)

func newUIEnv(t *testing.T, tweak ...func(*web.Config)) *uiEnv {
	t.Helper()
	e := &uiEnv{apiEnv: newAPIEnv(t, tweak...)}
	_, e.spikeAt = seedCurves(t, e.st)
	e.from, e.to = e.spikeAt.Add(-30*time.Minute), e.spikeAt.Add(30*time.Minute)
	// Samples: every 5 s over the incident window; after the onset the
	// requests of tenant A on replica chat-a are slow (queue grows).
	var b strings.Builder
	i := 0
	for at := e.from.Add(-30 * time.Minute); at.Before(e.to); at = at.Add(5 * time.Second) {
		for k, who := range []struct{ tenant, replica, node string }{{tenantA, "chat-a", "n1"}, {tenantB, "chat-b", "n2"}} {
			queue, exec := 5.0, 40.0
			if who.tenant == tenantA && !at.Before(e.spikeAt) {
				queue = 400 + float64(i%50)
			}
			fmt.Fprintf(&b, `{"request_id":"q-%06d-%d","time":%q,"model":"chat","version":"v1","tenant":%q,"replica":%q,"node":%q,"entry":"/v1/chat","batch_size":%d,"status":"ok","total_ms":%g,"stages_ms":{"gateway":2,"queue":%g,"exec":%g},"sample_rate":4}`+"\n",
				i, k, at.Format(time.RFC3339), who.tenant, who.replica, who.node, 1+i%6, 2+queue+exec, queue, exec)
		}
		i++
	}
	accepted(t, e.post("/api/v1/samples", "application/x-ndjson", []byte(b.String())))
	var inc struct{ ID int64 }
	r := e.post("/api/v1/incidents", "application/json", []byte(fmt.Sprintf(`{"title":"chat p99 up for %s","start":%q,"end":%q}`,
		tenantA, e.from.Format(time.RFC3339), e.to.Format(time.RFC3339))))
	if r.status != http.StatusCreated {
		t.Fatalf("create incident: %d %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &inc); err != nil {
		t.Fatal(err)
	}
	e.id = inc.ID
	e.storeAnalysis(t)
	return e
}

// analysis is a hand-made result shaped like correlate's, naming tenant A
// in a concentration row and a cause target.
func (e *uiEnv) analysis() correlate.Analysis {
	onset := e.spikeAt
	return correlate.Analysis{
		Window: correlate.Window{From: e.from, To: e.to},
		Onset:  &onset,
		Spikes: []correlate.Spike{{Role: correlate.RoleLatencyP99, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "chat"},
			Start: e.spikeAt, End: e.spikeAt.Add(10 * time.Minute), Onset: e.spikeAt, PeakValue: 900, Baseline: 100, Direction: correlate.Up}},
		Scope: correlate.ScopeReport{Breadth: "tenant", Summary: "Only tenant " + tenantA + " of chat slowed down.", Models: []string{"chat"},
			Tenants: []string{tenantA}},
		Causes: []correlate.Cause{
			{Category: correlate.CatCapacity, Score: 0.82, Target: correlate.Target{Model: "chat", Tenant: tenantA},
				Summary:         "Tenant " + tenantA + " surged past chat's capacity.",
				Evidence:        []correlate.Evidence{{Name: "queue_growth", Summary: "Queueing explains 91% of the tail's growth.", Value: 0.91, Strength: 0.9, Weight: 0.5}},
				CounterEvidence: []correlate.Evidence{{Name: "no_deploy", Summary: "No deploy of chat in the hour before.", Value: 0, Strength: 0.3, Weight: 0.1}},
				Actions:         []string{"Shed low-priority traffic of " + tenantA, "Scale chat out"}},
			{Category: correlate.CatLocalReplica, Score: 0.31, Target: correlate.Target{Replica: "chat-a", Node: "n1", Replicas: []string{"chat-a"}},
				Summary: "Replica chat-a is slower than its peers.", Actions: []string{"Drain chat-a"}},
		},
		Stages: []correlate.StageShare{
			{Stage: "queue", BeforeMs: 5, DuringMs: 420, DeltaMs: 415, DeltaLoMs: 400, DeltaHiMs: 430, Share: 0.97},
			{Stage: "exec", BeforeMs: 40, DuringMs: 41, DeltaMs: 1, DeltaLoMs: -1, DeltaHiMs: 3, Share: 0.03},
		},
		StageSource: "samples",
		Concentration: []correlate.Concentration{
			{Dims: map[string]string{"tenant": tenantA}, SelectionPct: 100, BaselinePct: 30, RiskRatio: 9.5, Support: 1, P99WithoutMs: 60, P99DeltaMs: 400, Count: 120},
			{Dims: map[string]string{"replica": "chat-a", "node": "n1"}, SelectionPct: 100, BaselinePct: 30, RiskRatio: 9.5, Support: 1, P99WithoutMs: 60, P99DeltaMs: 400, Count: 120},
			{Dims: map[string]string{"replica_age": "young"}, SelectionPct: 50, BaselinePct: 10, RiskRatio: 4, Support: 0.5, P99WithoutMs: 300, P99DeltaMs: 160},
		},
		Events: []correlate.AlignedEvent{{Event: correlate.Event{ID: "d1", Kind: correlate.KindDeploy, Time: e.spikeAt.Add(-5 * time.Minute),
			Scope: correlate.Scope{Model: "chat", Version: "v1"}, Summary: "rollout"}, OffsetS: -300, TimeWeight: 0.8, ScopeMatch: 0.5}},
		P99BeforeMs: 100, P99DuringMs: 900,
		Samples: correlate.SampleSummary{Total: 1400, Slow: 120, SlowMs: map[string]float64{"chat": 200}},
		Checklist: []correlate.ChecklistStep{{Step: "scope", Answer: "Only tenant " + tenantA + "."}, {Step: "timeline", Answer: "Latency rose."},
			{Step: "samples", Answer: "Queue grew."}, {Step: "action", Answer: "Shed load."}},
	}
}

func (e *uiEnv) storeAnalysis(t *testing.T) { t.Helper(); e.storeAnalysisOf(t, e.analysis()) }

// storeAnalysisOf stores a as the incident's newest ready analysis.
func (e *uiEnv) storeAnalysisOf(t *testing.T, a correlate.Analysis) {
	t.Helper()
	ctx := context.Background()
	v, err := e.st.StartAnalysis(ctx, e.id, "test")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.FinishAnalysis(ctx, e.id, v, body, ""); err != nil {
		t.Fatal(err)
	}
}

func (e *uiEnv) incidentPath() string { return fmt.Sprintf("/incidents/%d", e.id) }

// sharePath makes the incident's share link and returns its path.
func (e *uiEnv) sharePath(t *testing.T) string {
	t.Helper()
	tok, err := e.st.CreateShareLink(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	return "/s/" + tok
}

// browserClient is a cookie-keeping client that does not follow
// redirects, so tests see them.
type browserClient struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func (e *apiEnv) browser() *browserClient {
	jar, _ := cookiejar.New(nil)
	return &browserClient{t: e.t, base: e.srv.URL, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is a fetched answer, parsed when it is HTML.
type page struct {
	status int
	header http.Header
	body   string
	doc    *goquery.Document
}

func (b *browserClient) do(method, path string, form url.Values, hdr map[string]string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	p := page{status: res.StatusCode, header: res.Header, body: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		p.doc, err = goquery.NewDocumentFromReader(strings.NewReader(p.body))
		if err != nil {
			b.t.Fatal(err)
		}
		if v, ok := p.doc.Find(`meta[name=csrf-token]`).Attr("content"); ok {
			b.csrf = v
		}
	}
	return p
}

func (b *browserClient) get(path string) page { b.t.Helper(); return b.do("GET", path, nil, nil) }

// share makes a share link as the page's button does and follows the
// redirect to the page that shows it.
func (b *browserClient) share(incidentPath string) page {
	b.t.Helper()
	made := b.post(incidentPath+"/share", nil)
	if made.status != http.StatusSeeOther || made.header.Get("Location") != incidentPath {
		b.t.Fatalf("share: %d to %q, want 303 to %s", made.status, made.header.Get("Location"), incidentPath)
	}
	return b.get(incidentPath)
}

// fragment fetches path as htmx does when it swaps target.
func (b *browserClient) fragment(path, target string) page {
	b.t.Helper()
	return b.do("GET", path, nil, map[string]string{"HX-Request": "true", "HX-Target": target})
}

// post submits a form with the session's CSRF token (unless form has one).
func (b *browserClient) post(path string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	return b.do("POST", path, form, nil)
}

// login signs in with token through the login form.
func (b *browserClient) login(token string) {
	b.t.Helper()
	p := b.get("/login")
	csrf, _ := p.doc.Find(`input[name=csrf]`).Attr("value")
	r := b.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {token}, "next": {"/"}}, nil)
	if r.status != http.StatusSeeOther {
		b.t.Fatalf("login: %d %s", r.status, r.body)
	}
	b.get("/") // picks up the CSRF token
	if b.csrf == "" {
		b.t.Fatal("no CSRF token after login")
	}
}

// testid returns the elements with data-testid=id.
func (p page) testid(id string) *goquery.Selection { return p.doc.Find(`[data-testid="` + id + `"]`) }

func (p page) mustHave(t *testing.T, what string, ids ...string) {
	t.Helper()
	if p.doc == nil {
		t.Fatalf("%s: not HTML (%d): %.300s", what, p.status, p.body)
	}
	for _, id := range ids {
		if p.testid(id).Length() == 0 {
			t.Errorf("%s: no data-testid=%s in %.500s", what, id, p.body)
		}
	}
}

var _ = store.ScopeRead
