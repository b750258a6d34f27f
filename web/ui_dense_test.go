package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// seedDense writes 500 curves (3 h at 15 s) and 2,000 events into the
// window before testNow and opens an incident over it.
func seedDense(t testing.TB, e *apiEnv) int64 {
	t.Helper()
	ctx := context.Background()
	from := testNow.Add(-3 * time.Hour)
	n := int(3 * time.Hour / (15 * time.Second))
	var curves []correlate.Curve
	add := func(role correlate.Role, level correlate.Level, sc correlate.Scope, stage string, base float64) {
		c := correlate.Curve{Role: role, Level: level, Scope: sc, Stage: stage}
		for i := 0; i < n; i++ {
			v := base * (1 + 0.1*float64(i%7))
			if i > n*2/3 && role == correlate.RoleLatencyP99 {
				v *= 4
			}
			c.Points = append(c.Points, correlate.Point{T: from.Add(time.Duration(i) * 15 * time.Second).UnixMilli(), V: v})
		}
		curves = append(curves, c)
	}
	for m := 0; m < 10; m++ {
		sc := correlate.Scope{Model: fmt.Sprintf("model-%02d", m)}
		for _, r := range []correlate.Role{correlate.RoleLatencyP50, correlate.RoleLatencyP95, correlate.RoleLatencyP99,
			correlate.RoleQPS, correlate.RoleQueue, correlate.RoleBatchSize, correlate.RoleErrorRate} {
			add(r, correlate.LevelModel, sc, "", 10+float64(m))
		}
		for _, st := range correlate.StageNames() {
			add(correlate.RoleStageTime, correlate.LevelModel, sc, st, 5)
		}
	}
	for k := 0; k < 40; k++ {
		sc := correlate.Scope{Node: fmt.Sprintf("node-%02d", k)}
		for _, r := range []correlate.Role{correlate.RoleNodeCPU, correlate.RoleNodeMemory, correlate.RoleNodeNetwork, correlate.RoleGPUUtil} {
			add(r, correlate.LevelNode, sc, "", 0.5)
		}
	}
	for len(curves) < 500 {
		k := len(curves)
		add(correlate.RoleGPUMemUsed, correlate.LevelReplica, correlate.Scope{Replica: fmt.Sprintf("pod-%03d", k), Node: fmt.Sprintf("node-%02d", k%40)}, "", 20000)
	}
	defs := make([]store.SeriesDef, len(curves))
	for i, c := range curves {
		defs[i] = store.SeriesDef{Curve: c}
	}
	ids, err := e.st.EnsureSeries(ctx, defs)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.EnsurePartitions(ctx, store.TablePoints, from, testNow); err != nil {
		t.Fatal(err)
	}
	batch := make([]store.SeriesPoints, len(curves))
	for i, c := range curves {
		batch[i] = store.SeriesPoints{SeriesID: ids[c.Key()], Points: c.Points}
	}
	if _, err := e.st.UpsertPoints(ctx, batch); err != nil {
		t.Fatal(err)
	}
	kinds := []correlate.EventKind{correlate.KindReplicaRestart, correlate.KindScaleUp, correlate.KindDeploy, correlate.KindNodeFault, correlate.KindAlert}
	evs := make([]correlate.Event, 2000)
	for i := range evs {
		evs[i] = correlate.Event{ID: fmt.Sprintf("ev-%d", i), Kind: kinds[i%len(kinds)], Time: from.Add(time.Duration(i) * 5 * time.Second),
			Scope: correlate.Scope{Model: fmt.Sprintf("model-%02d", i%10)}, Summary: "event " + fmt.Sprint(i)}
	}
	if _, _, err := e.st.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	end := testNow
	inc, err := e.st.CreateIncident(ctx, store.NewIncident{Title: "dense", Start: from.Add(30 * time.Minute), End: &end})
	if err != nil {
		t.Fatal(err)
	}
	return inc.ID
}

// TestUIDenseWindow: with 500 curves and 2,000 events in the window the
// incident page stays small — events grouped into at most 96 buckets per
// row, at most six series per lane, ~240 points per series, and the
// values of at most four series per lane for the crosshair (~45 KB here,
// which moved the budget from 350 to 400 KiB; brotli takes them to a
// fraction).
func TestUIDenseWindow(t *testing.T) {
	e := newAPIEnv(t)
	id := seedDense(t, e)
	b := e.browser()
	b.login(e.read)
	start := time.Now()
	p := b.get(fmt.Sprintf("/incidents/%d", id))
	took := time.Since(start)
	if p.status != http.StatusOK {
		t.Fatalf("%d %.300s", p.status, p.body)
	}
	t.Logf("dense incident page: %d bytes (uncompressed) in %v", len(p.body), took)
	if len(p.body) > 400<<10 {
		t.Errorf("page is %d bytes; events and curves must be grouped and downsampled", len(p.body))
	}
	if n := p.doc.Find(".tl-events .ev").Length(); n == 0 || n > 4*96 {
		t.Errorf("%d event marks, want 1..%d", n, 4*96)
	}
	total := 0
	p.testid("event-lane").Each(func(_ int, s *goquery.Selection) {
		var k int
		fmt.Sscanf(strings.TrimSpace(s.Find(".muted").Text()), "(%d)", &k)
		total += k
	})
	if total != 2000 {
		t.Errorf("event lanes count %d events, want 2000", total)
	}
	p.doc.Find(".tl-row[data-testid^=lane-]").Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("data-testid")
		if n := s.Find("path").Length(); n > 18 {
			t.Errorf("%s draws %d paths", id, n)
		}
	})
	if !strings.Contains(p.testid("lane-cpu").Text(), "more") {
		t.Error("CPU lane of 40 nodes should say +N more")
	}
	if p.doc.Find(`[data-testid=lane-gpumem] path`).Length() == 0 {
		t.Error("GPU memory (per pod) is not totalled per node")
	}
}
