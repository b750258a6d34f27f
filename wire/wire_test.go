package wire_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// TestSampleRoundTrip: what a client encodes with NewSample decodes to
// the same sample; unreported stages stay unreported (NaN), not zero.
func TestSampleRoundTrip(t *testing.T) {
	t.Parallel()
	in := correlate.Sample{RequestID: "r-1", Time: time.Date(2026, 3, 2, 6, 0, 1, 250e6, time.UTC), Model: "chat", Version: "v2",
		Tenant: "t-a", Replica: "chat-0", Node: "n1", Entry: "/v1/chat", BatchSize: 4, Status: "ok", TotalMs: 42.5, SampleRate: 10}
	for i := range in.StagesMs {
		in.StagesMs[i] = math.NaN()
	}
	in.StagesMs[correlate.StageQueue], in.StagesMs[correlate.StageExec] = 2.5, 40
	raw, err := json.Marshal(wire.NewSample(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := wire.DecodeSample(raw)
	if err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	if !sameSample(in, out) {
		t.Fatalf("round trip changed the sample:\n%+v\n%+v\n%s", in, out, raw)
	}
	// A record without stages_ms or sample_rate: no stage reported, one in one kept.
	out, err = wire.DecodeSample([]byte(`{"request_id":"r","time":"2026-03-02T06:00:00Z","model":"m","total_ms":1}`))
	if err != nil || out.SampleRate != 1 || !math.IsNaN(out.StagesMs[correlate.StageQueue]) {
		t.Fatalf("defaults: %+v (%v)", out, err)
	}
}

func TestStagesNameTheBadEntry(t *testing.T) {
	t.Parallel()
	for raw, field := range map[string]string{
		`{"warp":1}`:    "stages_ms.warp",
		`{"queue":-1}`:  "stages_ms.queue",
		`{"queue":"x"}`: "stages_ms.queue",
		`[1]`:           "stages_ms",
	} {
		var st wire.Stages
		var fe *wire.FieldError
		if err := st.UnmarshalJSON([]byte(raw)); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v, want a field error on %s", raw, err, field)
		}
	}
}

// TestEventInDecodesAsEvent: the record a client sends reads back as the
// event the server stores and answers with.
func TestEventInDecodesAsEvent(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 3, 2, 6, 10, 0, 0, time.UTC)
	in := correlate.Event{ID: "d-1", Kind: correlate.KindDeploy, Time: end.Add(-10 * time.Minute), EndTime: &end,
		Scope: correlate.Scope{Model: "chat", Version: "v2"}, Source: "argocd", Summary: "v1 -> v2", Attrs: map[string]any{"revision": 7.0}}
	w, err := wire.NewEventIn(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(w)
	var out correlate.Event
	if err := json.Unmarshal(raw, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("%+v (%v), want %+v; wire %s", out, err, in, raw)
	}
}

func sameSample(a, b correlate.Sample) bool {
	for i := range a.StagesMs {
		if math.IsNaN(a.StagesMs[i]) != math.IsNaN(b.StagesMs[i]) {
			return false
		}
		if math.IsNaN(a.StagesMs[i]) {
			a.StagesMs[i], b.StagesMs[i] = 0, 0
		}
	}
	return reflect.DeepEqual(a, b)
}
