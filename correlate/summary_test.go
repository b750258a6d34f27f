package correlate

import (
	"math"
	"testing"
)

// The local cause's summary says "much slower" only on a measured
// outlier, and names the counter-evidence that rules a fault out.
func TestLocalSummarySaysWhatIsMeasured(t *testing.T) {
	type item struct {
		name     string
		strength float64
	}
	for _, c := range []struct {
		name       string
		for_, agst []item
		want       string
	}{
		{"measured outlier", []item{{"replica_outlier", 1}}, nil,
			"Requests served by replica r-1 are much slower than on its peers."},
		{"concentration alone", []item{{"slow_requests_concentrated", 0.8}, {"replica_outlier", 0.1}}, nil,
			"Slow requests concentrate on replica r-1, though it is not measured much slower than its peers."},
		{"weak", []item{{"replica_outlier", 0.2}}, nil,
			"Replica r-1 stands out only a little from its peers."},
		{"new replica", []item{{"replica_outlier", 1}}, []item{{"outliers_are_new", 1}, {"outlier_got_more_traffic", 0.4}},
			"Requests served by replica r-1 are much slower than on its peers, but the replicas that stand out are the new ones: a cold start, not a sick host."},
		{"more traffic", []item{{"replica_outlier", 1}}, []item{{"outlier_got_more_traffic", 0.9}, {"outliers_are_new", 0.5}},
			"Requests served by replica r-1 are much slower than on its peers, but it took a growing share of the traffic: overloaded by routing, not sick."},
		{"weak counter not named", []item{{"replica_outlier", 1}}, []item{{"outlier_got_more_traffic", 0.2}},
			"Requests served by replica r-1 are much slower than on its peers."},
	} {
		b := newCause(CatLocalReplica)
		for _, e := range c.for_ {
			b.support(e.name, 0, e.strength, 0.2, "x")
		}
		for _, e := range c.agst {
			b.oppose(e.name, 0, e.strength, 0.3, "x")
		}
		if got := localSummary(b, "replica r-1", "its peers"); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// The cold-start summary claims cold replicas only when they are measured
// slower, and hands new pods of a new version to the release.
func TestColdStartSummarySaysWhatIsMeasured(t *testing.T) {
	for _, c := range []struct {
		name            string
		slower, rollout float64
		want            string
	}{
		{"slower after a scale-up", 0.8, 0, "New m replicas took traffic before they were warm."},
		{"not measured slower", 0, 0, "3 new m replica(s) started before the onset, but the data does not show them slower than the warm ones."},
		// Shown, if too little to claim: the summary does not deny it.
		{"a little slower", 0.2, 0, "3 new m replica(s) started before the onset; their P99 is ×1.6 the warm ones', too little by itself to blame their warm-up."},
		{"came with a rollout", 0.8, 1, "The new m replicas are slower than the warm ones, but they run v2: they came with its rollout, not a scale-up, so the release is the suspect."},
		{"a little slower, rollout", 0.1, 1, "The new m replicas are slower than the warm ones (P99 ×1.6), but they run v2: they came with its rollout, not a scale-up, so the release is the suspect."},
		{"not slower, rollout", 0, 1, "3 new m replica(s) started before the onset, but the data does not show them slower than the warm ones."},
	} {
		b := newCause(CatColdStart)
		b.support("new_replicas_slower", 1.6, c.slower, 0.2, "x")
		if c.rollout > 0 {
			b.oppose("rollout_not_scale_up", 0, c.rollout, 0.4, "x")
		}
		if got := coldStartSummary(b, "m", 3, "v2", false); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// Without a traffic rise the capacity summary does not deny the queue it
// measured: the queue is put down to a slower or smaller pool.
func TestCapacitySummaryNamesTheQueueWithoutMoreDemand(t *testing.T) {
	for _, c := range []struct {
		name  string
		queue float64
		want  string
	}{
		{"queue grew", 0.6, "Traffic did not rise much (×1.11 against the hour before), though requests queue: the pool served more slowly or shrank; demand did not outgrow it."},
		{"queue barely grew", 0.1, "Traffic did not rise much (×1.11 against the hour before): no sign that demand outgrew the pool."},
	} {
		b := newCause(CatCapacity)
		b.support("traffic_up", 1.11, 0, 0.3, "x")
		b.support("queue_growth", 0.5, c.queue, 0.2, "x")
		if got := capacitySummary(b, capacityFacts{q: 1.11, gpu: math.NaN(), saturationKnown: true}); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A surge the samples do not pin on a tenant (too few samples, or none)
// reads as a sentence too: "Traffic rose ×4.77 outgrew the serving
// capacity" had lost its verb.
func TestCapacitySummarySurgeWithoutTenant(t *testing.T) {
	b := newCause(CatCapacity)
	b.support("traffic_up", 4.77, 1, 0.3, "x")
	b.support("queue_growth", 0.5, 0.6, 0.2, "x")
	want := "Traffic rose ×4.77 and outgrew the serving capacity: requests queue."
	if got := capacitySummary(b, capacityFacts{q: 4.77, gpu: math.NaN(), saturationKnown: true}); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	want = "A traffic surge (tenant t1 ×7.4) outgrew the serving capacity: requests queue."
	b.support("tenant_surge", 7.4, 1, 0.2, "x")
	if got := capacitySummary(b, capacityFacts{q: 4.77, gpu: math.NaN(), saturationKnown: true, tenant: "t1", tenantRatio: 7.4}); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
