package pull

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/waterline-dev/waterline/internal/testing/vmtest"
	"github.com/waterline-dev/waterline/store/storetest"
)

// VictoriaMetrics answers every error with HTTP 422 and its status code
// as the error type ("422"), whatever the cause: only the message tells.
// Its "cannot select more than -search.maxSamplesPerQuery" and "too many
// points ... -search.maxPointsPerTimeseries" were not read as too big, so
// a catch-up chunk was asked whole every round (the cursor never moved)
// and a history pull failed; a syntax error was not a rejected query, so
// serve only warned about it at start-up and an ad-hoc typo was retried,
// then answered as an unreachable backend.
func TestVictoriaMetricsRefusalsAreRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Hour).Add(-7 * time.Hour)
	end := start.Add(time.Duration(refusedPoints) * 15 * time.Second)
	// At most 200 points per series per query (a 6 h chunk at 15 s has
	// 1,440), and 6,000 samples read: VictoriaMetrics counts whole blocks,
	// here every sample of a series, so four models pass and ten never do.
	vm := vmtest.StartWith(t, "-search.maxPointsPerTimeseries=200", "-search.maxSamplesPerQuery=6000")
	vm.Import(t, strings.NewReader(p99OpenMetrics(refusedModels, refusedPoints, start)))
	const models = 4
	cfg := `lookback: 6h
presets: []
queries:
  - role: latency_p99
    level: model
    labels: {model: model}
    expr: 'p99_ms{model=~"m-[0-3]"}'
`
	st := storetest.New(t)
	p := newPuller(t, st, vm.URL, cfg, end)
	// The fixture refuses both ways, as VictoriaMetrics does: 422, its
	// limit named in the message.
	for _, c := range []struct {
		expr  string
		span  time.Duration
		limit string
	}{
		{`p99_ms{model=~"m-[0-3]"}`, 6 * time.Hour, "maxPointsPerTimeseries"},
		{"p99_ms", 30 * time.Minute, "maxSamplesPerQuery"},
	} {
		_, err := p.prom.rangeQuery(ctx, "probe", c.expr, end.Add(-c.span), end, 15*time.Second)
		var ae *v1.Error
		if !errors.As(err, &ae) || ae.Type != "422" || !strings.Contains(ae.Msg, c.limit) {
			t.Fatalf("%v of %s: %v; want VictoriaMetrics' 422 naming -search.%s", c.span, c.expr, err, c.limit)
		}
		if big, _ := tooBig(err); !big {
			t.Errorf("VictoriaMetrics' refusal for %s is not read as too big: %v", c.limit, err)
		}
	}

	// The live loop's catch-up asks in halves and completes in one round.
	if err := p.Tick(ctx); err != nil {
		t.Errorf("the catch-up round failed: %v", err)
	} else if n := storedPoints(t, st, start.Add(-time.Hour), end.Add(time.Hour)); n < models*(refusedPoints-8) {
		t.Errorf("catch-up: %d points stored, want about %d", n, models*refusedPoints)
	}
	// So does a history pull.
	st2 := storetest.New(t)
	p2 := newPuller(t, st2, vm.URL, cfg, end)
	pr, err := p2.History(ctx, start, end.Add(-15*time.Second), nil)
	if err != nil {
		t.Errorf("history: %v", err)
	} else if n := storedPoints(t, st2, start.Add(-time.Hour), end.Add(time.Hour)); n < models*(refusedPoints-8) || pr.ChunksDone != pr.Chunks {
		t.Errorf("history: %d points stored (want about %d), %d of %d chunks", n, models*refusedPoints, pr.ChunksDone, pr.Chunks)
	}

	// A syntax error, an unknown function: rejected, whichever way asked.
	for _, bad := range []string{"sum(p99_ms", "no_such_func(p99_ms)"} {
		_, err := p.prom.instant(ctx, "probe", bad, end)
		if qe := (*QueryError)(nil); !errors.As(err, &qe) || !qe.Rejected {
			t.Errorf("instant %s: %v; want a rejected query", bad, err)
		}
		_, err = p.QueryRange(ctx, bad, end.Add(-30*time.Minute), end, 15*time.Second)
		if qe := (*QueryError)(nil); !errors.As(err, &qe) || !qe.Rejected {
			t.Errorf("ad-hoc %s: %v; want a rejected query", bad, err)
		}
	}
	bad, err := ParseConfig("bad.yaml", []byte("presets: []\nqueries:\n  - {role: latency_p99, level: model, labels: {model: model}, expr: 'sum by (model) (p99_ms'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Validate(ctx, vm.URL, end)
	if qe := (*QueryError)(nil); !errors.As(err, &qe) || !qe.Rejected || !strings.Contains(err.Error(), "bad.yaml:3") {
		t.Errorf("Validate: %v; want the query at bad.yaml:3 rejected", err)
	}

	// VictoriaMetrics quotes the query in its messages: words inside it
	// are not the cause. A match that is not one-to-one is neither a
	// rejected expression nor too big, whatever its label values say.
	odd := `p99_ms{model="m-1",model!="parse error: query timed out"} / on() p99_ms{model=~"m-[23]"}`
	_, err = p.prom.rangeQuery(ctx, "probe", odd, end.Add(-5*time.Minute), end, 15*time.Second)
	var ae *v1.Error
	if !errors.As(err, &ae) || ae.Type != "422" || !strings.Contains(ae.Msg, "duplicate time series") {
		t.Fatalf("%s: %v; want VictoriaMetrics' 422 for duplicate series", odd, err)
	}
	big, once := tooBig(err)
	if qe := (*QueryError)(nil); !errors.As(err, &qe) || qe.Rejected || big || once {
		t.Errorf("%v: read as rejected=%v, tooBig=(%v, %v); want none", err, qe != nil && qe.Rejected, big, once)
	}
}
