package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// incidentWithSpikes opens an incident and attaches the given spikes.
func incidentWithSpikes(t *testing.T, st *store.Store, base time.Time, spikes ...correlate.Spike) int64 {
	t.Helper()
	ctx := context.Background()
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "t", Start: base, Scope: correlate.Scope{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, sp := range spikes {
		id, _, _, err := st.RecordSpike(ctx, fmt.Sprintf("%s/%s/%d/%d", sp.Role, sp.Scope.Model, in.ID, i), sp)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.AttachSpike(ctx, id, in.ID); err != nil {
			t.Fatal(err)
		}
	}
	return in.ID
}

func latencySpike(role correlate.Role, model string, onset time.Time, peak, baseline float64, ongoing bool) correlate.Spike {
	return correlate.Spike{Role: role, Level: correlate.LevelModel, Scope: correlate.Scope{Model: model},
		Start: onset.Add(time.Minute), End: onset.Add(10 * time.Minute), Ongoing: ongoing, Onset: onset,
		PeakTime: onset.Add(3 * time.Minute), PeakValue: peak, Baseline: baseline, Direction: correlate.Up,
		DetectedAt: onset.Add(2 * time.Minute), Score: 0.8, Severity: "page"}
}

// TestIncidentSpikesFromSpikes: with no analysis the row comes from the
// attached spikes: the earliest onset, the latest end, the highest spike.
func TestIncidentSpikesFromSpikes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	id := incidentWithSpikes(t, st, base,
		latencySpike(correlate.RoleLatencyP99, "m", base.Add(5*time.Minute), 900, 200, false),
		latencySpike(correlate.RoleLatencyP99, "m", base.Add(2*time.Minute), 1500, 300, false),
		correlate.Spike{Role: correlate.RoleQPS, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "m"},
			Start: base.Add(9 * time.Minute), End: base.Add(40 * time.Minute), Onset: base.Add(8 * time.Minute),
			PeakTime: base.Add(9 * time.Minute), PeakValue: 50000, Baseline: 100, Direction: correlate.Up,
			DetectedAt: base.Add(9 * time.Minute), Severity: "info"})
	got, err := st.IncidentSpikes(ctx, []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	sp := got[id]
	if sp.Source != "spikes" || sp.Onset == nil || !sp.Onset.Equal(base.Add(2*time.Minute)) {
		t.Fatalf("source/onset: %+v", sp)
	}
	if sp.PeakMs != 1500 || sp.BaselineMs != 300 || sp.PeakAt == nil || !sp.PeakAt.Equal(base.Add(5*time.Minute)) {
		t.Errorf("peak: %+v", sp)
	}
	if sp.Ongoing || sp.RecoveredAt == nil || !sp.RecoveredAt.Equal(base.Add(40*time.Minute)) {
		t.Errorf("recovery: %+v", sp)
	}
}

// readyAnalysis stores a ready analysis with the given result JSON.
func readyAnalysis(t *testing.T, st *store.Store, id int64, result string) {
	t.Helper()
	ctx := context.Background()
	v, err := st.StartAnalysis(ctx, id, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishAnalysis(ctx, id, v, []byte(result), ""); err != nil {
		t.Fatal(err)
	}
}

// TestIncidentSpikesAnalysisSource: an analysis is the source only when it
// located an onset; without an impact row the spikes say whether it is
// over; the peak is the larger of the impact's peak and during P99, as
// the incident page and the export show it.
func TestIncidentSpikesAnalysisSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	spike := latencySpike(correlate.RoleLatencyP99, "m", base.Add(2*time.Minute), 1500, 300, false)

	noOnset := incidentWithSpikes(t, st, base, spike)
	readyAnalysis(t, st, noOnset, `{"impact":[{"model":"m","status":"ongoing"}]}`)
	noImpact := incidentWithSpikes(t, st, base, spike)
	readyAnalysis(t, st, noImpact, `{"onset":"`+base.Add(3*time.Minute).Format(time.RFC3339)+`"}`)
	nullImpact := incidentWithSpikes(t, st, base, spike) // a JSON null, as an empty Go slice marshals
	readyAnalysis(t, st, nullImpact, `{"onset":"`+base.Add(3*time.Minute).Format(time.RFC3339)+`","impact":[null]}`)
	full := incidentWithSpikes(t, st, base, spike)
	readyAnalysis(t, st, full, `{"onset":"`+base.Add(3*time.Minute).Format(time.RFC3339)+`","impact":[{"model":"m",
		"peak_p99_ms":800,"during_p99_ms":950,"peak_at":"`+base.Add(6*time.Minute).Format(time.RFC3339)+`","baseline_p99_ms":200,
		"status":"recovered","recovered_at":"`+base.Add(20*time.Minute).Format(time.RFC3339)+`"}]}`)

	got, err := st.IncidentSpikes(ctx, []int64{noOnset, noImpact, nullImpact, full})
	if err != nil {
		t.Fatal(err)
	}
	if sp := got[noOnset]; sp.Source != "spikes" || sp.Onset == nil || !sp.Onset.Equal(base.Add(2*time.Minute)) || sp.PeakMs != 1500 {
		t.Errorf("analysis without onset: want the spikes' row, got %+v", sp)
	}
	if sp := got[noImpact]; sp.Source != "analysis" || sp.Ongoing || sp.RecoveredAt == nil || !sp.RecoveredAt.Equal(spike.End) {
		t.Errorf("analysis without impact: want the spikes' recovery, got %+v", sp)
	}
	if sp := got[nullImpact]; sp.Source != "analysis" || sp.Ongoing || sp.RecoveredAt == nil {
		t.Errorf("analysis whose impact is null: want the spikes' recovery, got %+v", sp)
	}
	if sp := got[full]; sp.Source != "analysis" || sp.PeakMs != 950 || sp.BaselineMs != 200 || sp.Ongoing ||
		sp.RecoveredAt == nil || !sp.RecoveredAt.Equal(base.Add(20*time.Minute)) {
		t.Errorf("full analysis: want peak 950 (the larger of peak and during, as the page shows) recovered at +20m, got %+v", sp)
	}
}

// TestIncidentSpikesAnyQuantile: the detector opens incidents from any
// latency quantile, so the row's peak is the latency spike that rose most
// over its baseline, whichever quantile, and says which.
func TestIncidentSpikesAnyQuantile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	id := incidentWithSpikes(t, st, base,
		latencySpike(correlate.RoleLatencyP99, "m", base.Add(2*time.Minute), 2000, 1000, false),
		latencySpike(correlate.RoleLatencyP50, "m", base.Add(3*time.Minute), 1307, 100, false),
		latencySpike(correlate.RoleLatencyP95, "m", base.Add(4*time.Minute), 1500, 500, false))
	only50 := incidentWithSpikes(t, st, base, latencySpike(correlate.RoleLatencyP50, "m", base.Add(3*time.Minute), 700, 100, true))
	got, err := st.IncidentSpikes(ctx, []int64{id, only50})
	if err != nil {
		t.Fatal(err)
	}
	if sp := got[id]; sp.Quantile != "P50" || sp.PeakMs != 1307 || sp.BaselineMs != 100 {
		t.Errorf("want the P50 spike (×13), got %+v", sp)
	}
	if sp := got[only50]; sp.Source != "spikes" || sp.Quantile != "P50" || sp.PeakMs != 700 || !sp.Ongoing {
		t.Errorf("P50 only: want its peak, got %+v", sp)
	}
}

// A detector incident whose first spike was never attached (the attach
// failed after the open) is still joined by the next pass's spike, rather
// than a second incident paging again and the first staying open for ever.
func TestOpenDetectorIncidentWithoutSpikesIsJoined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	onset := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "t", Source: store.SourceDetector, Start: onset.Add(-30 * time.Minute), Scope: correlate.Scope{Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.OpenDetectorIncident(ctx, "m", onset.Add(15*time.Second), 30*time.Minute)
	if err != nil || got.ID != in.ID {
		t.Fatalf("open detector incident: %+v, %v; want #%d", got, err, in.ID)
	}
}

// TestIncidentSpikesMeanAndP95: a model measured by its mean alone (Triton
// without its summary) or by a P95 alone is listed with that measure, not
// as a "P99"; a detector incident from a mean spike has its peak; and the
// newest data is read from whichever latency curve the model has.
func TestIncidentSpikesMeanAndP95(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	meanSpike := incidentWithSpikes(t, st, base, latencySpike(correlate.RoleLatencyMean, "m", base.Add(2*time.Minute), 80, 20, true))
	meanAnalysis := incidentWithSpikes(t, st, base)
	readyAnalysis(t, st, meanAnalysis, `{"onset":"`+base.Add(3*time.Minute).Format(time.RFC3339)+`","impact":[{"model":"m",
		"peak_p99_ms":80,"baseline_p99_ms":20,"quantile":"mean","status":"ongoing"}]}`)
	p95Analysis := incidentWithSpikes(t, st, base)
	readyAnalysis(t, st, p95Analysis, `{"onset":"`+base.Add(3*time.Minute).Format(time.RFC3339)+`","impact":[{"model":"m",
		"peak_p99_ms":400,"baseline_p99_ms":100,"quantile":"P95","status":"ongoing"}]}`)
	oldAnalysis := incidentWithSpikes(t, st, base) // stored before the quantile field
	readyAnalysis(t, st, oldAnalysis, `{"onset":"`+base.Add(3*time.Minute).Format(time.RFC3339)+`","impact":[{"model":"m",
		"peak_p99_ms":400,"baseline_p99_ms":100,"status":"ongoing"}]}`)
	writeCurves(t, st, []correlate.Curve{{Role: correlate.RoleLatencyMean, Level: correlate.LevelModel, Scope: correlate.Scope{Model: "m"},
		Points: ramp(base, 10, time.Minute, func(int) float64 { return 20 })}})

	got, err := st.IncidentSpikes(ctx, []int64{meanSpike, meanAnalysis, p95Analysis, oldAnalysis})
	if err != nil {
		t.Fatal(err)
	}
	if sp := got[meanSpike]; sp.Source != "spikes" || sp.Quantile != "mean" || sp.PeakMs != 80 || sp.BaselineMs != 20 {
		t.Errorf("mean spike: want its peak quoted as the mean, got %+v", sp)
	}
	if sp := got[meanAnalysis]; sp.Quantile != "mean" {
		t.Errorf("mean analysis: quantile %q", sp.Quantile)
	}
	if sp := got[p95Analysis]; sp.Quantile != "P95" {
		t.Errorf("P95 analysis: quantile %q", sp.Quantile)
	}
	if sp := got[oldAnalysis]; sp.Quantile != "P99" {
		t.Errorf("analysis without quantile: %q, want P99", sp.Quantile)
	}
	last := base.Add(9 * time.Minute)
	for _, id := range []int64{meanSpike, meanAnalysis} {
		if sp := got[id]; sp.LastData == nil || !sp.LastData.Equal(last) {
			t.Errorf("incident %d: last data %v, want %v (the mean curve's newest point)", id, sp.LastData, last)
		}
	}
}

// A recorded spike keeps an open incident waiting only if it could join
// it: ongoing, unattached, begun within the incident's span, and severe
// enough to open incidents. Another model's mild drift from before a fleet
// incident kept it open for a day.
func TestPendingSpikeOnlyWhatCouldJoin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	base := time.Date(2026, 10, 6, 10, 0, 0, 0, time.UTC)
	record := func(model string, onset time.Time, severity string) {
		t.Helper()
		sp := latencySpike(correlate.RoleLatencyP99, model, onset, 320, 200, true)
		sp.Severity = severity
		if _, _, _, err := st.RecordSpike(ctx, "latency_p99|model|model="+model, sp); err != nil {
			t.Fatal(err)
		}
	}
	start, until := base.Add(time.Hour), base.Add(2*time.Hour)
	page := []string{"page"}
	record("drift", base, "ticket")                    // before the incident, and mild
	record("early", base.Add(30*time.Minute), "page")  // before the incident
	record("mild", base.Add(90*time.Minute), "ticket") // mild
	check := func(model string, sev []string, want bool) {
		t.Helper()
		if got, err := st.PendingSpike(ctx, model, start, until, sev); err != nil || got != want {
			t.Errorf("pending %q %v: %v (%v), want %v", model, sev, got, err, want)
		}
	}
	check("", page, false)
	check("", []string{"page", "ticket"}, true) // mild counts when tickets open incidents
	record("late", base.Add(100*time.Minute), "page")
	check("", page, true)
	check("late", page, true)
	check("drift", []string{"page", "ticket"}, false)
}
