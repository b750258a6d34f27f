package correlate

import "testing"

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
		if got := localSummary(b, "replica r-1"); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
