package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// The capacity cause carries its pool (issue 17, item 5): the replicas
// that served the model and what scaled it, on the page and in the
// export, and the autoscaler's limits its scale event carries (the pull's
// attributes from kube_horizontalpodautoscaler_spec_min/max_replicas).
func TestUICapacityCauseShowsThePool(t *testing.T) {
	e := newUIEnv(t)
	a := e.analysis()
	a.Replicas = []correlate.ReplicaComparison{{Replica: "chat-a", Model: "chat", Node: "n1", P99DuringMs: 400}, {Replica: "chat-b", Model: "chat", Node: "n2", P99DuringMs: 380}}
	a.Events = append(a.Events, correlate.AlignedEvent{Event: correlate.Event{ID: "hpa1", Kind: correlate.KindScaleUp,
		Time: e.spikeAt.Add(3 * time.Minute), Scope: correlate.Scope{Model: "chat"}, Source: "kube-state-metrics",
		Summary: "scale up chat 2 → 3 replicas (HPA desired replicas)", Attrs: map[string]any{"from": 2, "to": 3, "via": "HPA desired replicas", "hpa_min_replicas": 2, "hpa_max_replicas": 3}}})
	e.storeAnalysisOf(t, a)
	w := e.browser()
	w.login(e.read)
	page := w.get(e.incidentPath())
	pool := page.doc.Find(`[data-testid=cause][data-category=capacity] [data-testid=pool][data-model=chat]`)
	if pool.Length() != 1 {
		t.Fatalf("no pool under the capacity cause: %s", page.testid("causes").Text())
	}
	text := func(id string) string {
		return strings.Join(strings.Fields(pool.Find(`[data-testid=`+id+`]`).Text()), " ")
	}
	if got := text("pool-replicas"); got != "2 replicas served during the spike: chat-a on n1, chat-b on n2" {
		t.Errorf("replicas %q", got)
	}
	if got := text("pool-scaling"); !strings.HasPrefix(got, "2 → 3 replicas (HPA desired replicas) at ") || !strings.HasSuffix(got, "3 min after the onset") {
		t.Errorf("scaling %q", got)
	}
	at := e.spikeAt.Add(3*time.Minute).UTC().Format("15:04") + " UTC"
	if got := text("pool-limits"); got != "autoscaler 2–3 replicas; at its max since "+at {
		t.Errorf("limits %q", got)
	}
	if n := page.doc.Find(`[data-testid=cause][data-category=local_replica] [data-testid=pool]`).Length(); n != 0 {
		t.Errorf("the local-replica cause shows %d pools", n)
	}
	md := w.get(e.incidentPath() + "/export.md").body
	for _, want := range []string{"Pool of chat:", "- Replicas: 2 replicas served during the spike: chat-a on n1, chat-b on n2",
		"- Scaling: 2 → 3 replicas \\(HPA desired replicas\\) at ", "- Autoscaler limits: autoscaler 2–3 replicas; at its max since " + at} {
		if !strings.Contains(md, want) {
			t.Errorf("export lacks %q:\n%s", want, md)
		}
	}
}
