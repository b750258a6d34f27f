package correlate

import (
	"testing"
	"time"
)

func TestAlignEventsWeightsAndDedupes(t *testing.T) {
	t.Parallel()
	onset := t0.Add(time.Hour)
	a := affectedScope{models: map[string]bool{"chat": true}, replicas: map[string]bool{}, nodes: map[string]bool{"n1": true}}
	events := []Event{
		{ID: "push", Kind: KindDeploy, Time: onset.Add(-2 * time.Minute), Scope: Scope{Model: "chat", Version: "v2"}, Source: "argo"},
		{ID: "ksm", Kind: KindDeploy, Time: onset.Add(-90 * time.Second), Scope: Scope{Model: "chat", Version: "v2"}, Source: derivedSource},
		{ID: "other", Kind: KindDeploy, Time: onset.Add(-2 * time.Minute), Scope: Scope{Model: "rerank"}, Source: "argo"},
		{ID: "late", Kind: KindDeploy, Time: onset.Add(5 * time.Minute), Scope: Scope{Model: "chat"}, Source: "argo"},
		{ID: "old", Kind: KindConfigChange, Time: onset.Add(-2 * time.Hour)},
		{ID: "node", Kind: KindNodeFault, Time: onset.Add(-30 * time.Second), Scope: Scope{Node: "n1"}},
		{ID: "alert", Kind: KindAlert, Time: onset.Add(time.Minute)},
	}
	got := alignEvents(events, onset, 15*time.Second, a)
	byID := map[string]AlignedEvent{}
	for _, e := range got {
		byID[e.ID] = e
	}
	if _, ok := byID["ksm"]; ok {
		t.Error("the derived copy of a pushed deploy was kept")
	}
	if w := byID["push"].TimeWeight * byID["push"].ScopeMatch; w < 0.8 {
		t.Errorf("deploy of the affected model 2 min before: weight %.2f", w)
	}
	if w := byID["other"].TimeWeight * byID["other"].ScopeMatch; w > 0.1 {
		t.Errorf("deploy of another model: weight %.2f", w)
	}
	for _, id := range []string{"late", "old", "alert"} {
		if byID[id].TimeWeight != 0 {
			t.Errorf("%s: time weight %.2f, want 0", id, byID[id].TimeWeight)
		}
	}
	if byID["node"].ScopeMatch != 1 || got[0].ID != "node" {
		t.Errorf("node fault on the affected node should lead: %+v", got[0])
	}
}
