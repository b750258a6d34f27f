package diagnose_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// An incident left open (an alert group that keeps firing, a manual
// incident without an end) is analysed from its start to now every 30 s.
// Past maxAnalysisSamples the fast samples are thinned, but every sample
// slower than the window's P90 was kept: a tenth of the window, growing
// with the incident's age — at 200 samples/s, 1.7 million samples
// (~550 MB) per pass after a day, 5 million after three. The rows one
// analysis reads must stay bounded however long the window.
func TestLongOpenIncidentReadsBoundedSamples(t *testing.T) {
	const bound = 2000
	defer diagnose.SetMaxAnalysisSamples(bound)()
	ctx, st := context.Background(), storetest.New(t)
	now := testclock.Now().UTC().Truncate(time.Minute)
	from := now.Add(-72 * time.Hour) // open for three days
	var days []time.Time
	for d := from.Add(-3 * time.Hour); d.Before(now.Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
		days = append(days, d)
	}
	if err := st.EnsurePartitions(ctx, store.TableSamples, days...); err != nil {
		t.Fatal(err)
	}
	var in []correlate.Sample
	i := 0
	for at := from.Add(-time.Hour); at.Before(now); at = at.Add(5 * time.Second) {
		s := correlate.Sample{RequestID: fmt.Sprintf("r-%d", i), Time: at, Model: "chat", TotalMs: float64(50 + i%100), SampleRate: 1}
		if i%10 == 0 {
			s.TotalMs = float64(2000 + i%1000) // the slowest tenth
		}
		in = append(in, s)
		i++
	}
	if _, _, err := st.InsertSamples(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := diagnose.LoadInput(ctx, st, correlate.Window{From: from, To: now}, correlate.Scope{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Samples); n > 2*bound {
		t.Errorf("one analysis of a window open for three days read %d of its %d samples; want at most about %d", n, len(in), bound)
	}
	t.Logf("read %d of %d samples", len(got.Samples), len(in))
	// Still unbiased: the weights add up to the window's count.
	var w float64
	for _, s := range got.Samples {
		w += s.SampleRate
	}
	if w < 0.8*float64(len(in)) || w > 1.2*float64(len(in)) {
		t.Errorf("weights add up to %.0f, want about %d", w, len(in))
	}
}
