package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/wire"
)

var (
	reLive = regexp.MustCompile(`(?m)^live: incident #(\d+) opened by the detector at (\d\d:\d\d:\d\dZ), (\d+) s after the injected onset; top cause (\w+) \((\d\.\d\d)\)$`)
	reHook = regexp.MustCompile(`webhook delivered at \S+: format waterline, (\S+), incident #(\d+), key ([^\s,]+)`)
)

// TestDemoLive runs `waterline demo --live` on a small fleet: Prometheus
// scrapes the simulated exporters every 5 s, serve's pull loop and
// detector run, and nothing but the detector opens the incident. The
// injected cause must rank first and each webhook event must reach the
// receiver exactly once. It takes about two and a half minutes of real
// time (the incident has to happen), -short or not.
func TestDemoLive(t *testing.T) {
	t.Parallel()
	d := startDemo(t, "-live", "-small", "-scenario", "release", "-seed", "1", "-inject-after", "10s", "-addr", "127.0.0.1:0", "-timeout", "4m")
	dir := d.wait(t, reWorkDir, 10*time.Second)
	pgAddr := d.wait(t, rePgPort, time.Minute)
	promURL := d.wait(t, rePromURL, 2*time.Minute)
	d.wait(t, reLive, 6*time.Minute)
	page := d.wait(t, reIncident, 10*time.Second)
	token := d.wait(t, reToken, time.Second)
	base := d.wait(t, reWL, time.Second)
	t.Logf("demo output:\n%s%s", d.stderr, d.stdout)

	var truth sim.Truth
	raw, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &truth); err != nil || truth.Onset == nil {
		t.Fatalf("truth.json: %v %+v", err, truth)
	}
	m := reLive.FindStringSubmatch(d.stdout.String())
	id, after, top := m[1], m[3], m[4]
	if page != base+"/incidents/"+id {
		t.Fatalf("incident page %s, live line names #%s", page, id)
	}
	if top != truth.Category {
		t.Fatalf("top cause %s, injected %s", top, truth.Category)
	}
	if s, _ := strconv.Atoi(after); s < 0 || s > 240 {
		t.Fatalf("opened %s s after the onset", after)
	}

	// The detector opened it (nobody else could have: the demo never
	// posts an incident), after the onset, and the analysis agrees.
	var inc wire.Incident
	getJSON(t, base+"/api/v1/incidents/"+id, token, &inc)
	if inc.Source != "detector" {
		t.Fatalf("incident #%s source %q, want detector", id, inc.Source)
	}
	var all wire.IncidentPage
	getJSON(t, base+"/api/v1/incidents", token, &all)
	for _, in := range all.Incidents {
		if in.Source != "detector" {
			t.Errorf("incident #%d from %s: only the detector opens incidents in a live run", in.ID, in.Source)
		}
	}
	// The backfilled hour is a quiet fleet: the detector's first pass
	// judges it all, and nothing in it may open an incident.
	if len(all.Incidents) != 1 || strings.Contains(d.stderr.String(), "(a false alarm)") {
		t.Errorf("%d incidents, want the injected one only", len(all.Incidents))
	}
	var an wire.Analysis
	getJSON(t, base+"/api/v1/incidents/"+id+"/analysis", token, &an)
	if an.Status != "ready" || len(an.Causes) == 0 || string(an.Causes[0].Category) != truth.Category || an.Causes[0].Target.Model != truth.Target.Model {
		t.Fatalf("analysis %s, top cause %+v; injected %+v", an.Status, an.Causes, truth)
	}

	// Every delivery the server made reached the receiver once: one
	// attempt each, one delivery per idempotency key, and the receiver
	// printed each key once.
	time.Sleep(2 * time.Second)
	var hooks wire.WebhookList
	getJSON(t, base+"/api/v1/webhooks", token, &hooks)
	if len(hooks.Webhooks) != 1 {
		t.Fatalf("webhooks: %+v", hooks)
	}
	var dl struct {
		Deliveries []wire.Delivery `json:"deliveries"`
	}
	getJSON(t, base+"/api/v1/webhooks/"+strconv.FormatInt(hooks.Webhooks[0].ID, 10)+"/deliveries", token, &dl)
	keys := map[string]bool{}
	opened := 0
	for _, x := range dl.Deliveries {
		if x.Status != "delivered" || x.Attempts != 1 {
			t.Errorf("delivery %d (%s): %s after %d attempts", x.ID, x.Event, x.Status, x.Attempts)
		}
		if keys[x.IdempotencyKey] {
			t.Errorf("idempotency key %s queued twice", x.IdempotencyKey)
		}
		keys[x.IdempotencyKey] = true
		if strconv.FormatInt(x.IncidentID, 10) == id && x.Event == "incident.opened" {
			opened++
		}
	}
	if opened != 1 {
		t.Errorf("incident.opened of #%s delivered %d times, want once", id, opened)
	}
	printed := map[string]int{}
	for _, pm := range reHook.FindAllStringSubmatch(d.stderr.String(), -1) {
		printed[pm[3]]++
	}
	for k := range keys {
		if printed[k] != 1 {
			t.Errorf("receiver printed key %s %d times, want once", k, printed[k])
		}
	}
	if len(printed) != len(keys) || strings.Contains(d.stderr.String(), "again: same idempotency key") {
		t.Errorf("receiver printed %v; server delivered %v", printed, keys)
	}

	if err := d.stop(); err != nil {
		t.Fatalf("demo after Ctrl-C: %v", err)
	}
	assertStopped(t, dir, pgAddr, promURL, base)
}
