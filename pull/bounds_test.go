package pull

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/internal/testing/syncbuf"
	"github.com/waterline-dev/waterline/store/storetest"
)

// The pod join is cached per window, to share it among the sources that
// pull that window. A live round's windows are never pulled again (the
// cursor moves on), yet every round's join stayed until 256 of them had
// piled up: about two hours of rounds, some 50 MB at 500 pods (half a GB
// at 5,000), rebuilt in a sawtooth for as long as serve runs. A live
// round's past joins must not outlive the next few rounds.
func TestPodJoinsOfPastRoundsAreForgotten(t *testing.T) {
	f := eventsFleet()
	var buf bytes.Buffer
	if err := f.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	prom := promtest.Run(t, &buf)
	cfg, err := ParseConfig("bounds.yaml", []byte("lookback: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := f.End().Add(-20 * time.Minute)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	p, err := New(cfg, Backend{URL: prom.URL}, storetest.New(t), Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 40 // 20 minutes of 30 s rounds
	for round := range rounds {
		if err := p.Tick(context.Background()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		mu.Lock()
		clock = clock.Add(30 * time.Second)
		mu.Unlock()
	}
	p.pods.mu.Lock()
	n := len(p.pods.entries)
	p.pods.mu.Unlock()
	if n > 2 {
		t.Errorf("the pod joins of %d windows are held after %d live rounds; want the current round's at most", n, rounds)
	}
}

// A source some of whose series lack the labels their level needs (a GPU
// exporter that also reports GPUs of pods no model owns, a query whose
// labels mapping is off) said so at warn level every round, for as long
// as serve runs: 2,880 lines a day per source at 30 s rounds, with
// nothing new after the first.
func TestUnscopedSeriesAreNotWarnedEveryRound(t *testing.T) {
	var om strings.Builder
	om.WriteString("# TYPE p99 gauge\n")
	end := t0.Add(time.Hour)
	for at := t0; at.Before(end); at = at.Add(15 * time.Second) {
		fmt.Fprintf(&om, "p99{model=\"a\"} 5 %d\np99{pod=\"x\"} 5 %d\n", at.Unix(), at.Unix())
	}
	om.WriteString("# EOF\n")
	prom := promtest.Run(t, strings.NewReader(om.String()))
	cfg, err := ParseConfig("bounds.yaml", []byte(`presets: []
lookback: 10m
queries:
  - {name: lat, role: latency_p99, level: model, labels: {model: model}, expr: p99}
`))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	clock := t0.Add(20 * time.Minute)
	p, err := New(cfg, Backend{URL: prom.URL}, storetest.New(t), Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 60
	for range rounds {
		if err := p.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(30 * time.Second)
	}
	if n := strings.Count(logs.String(), "without the scope labels"); n != 1 {
		t.Errorf("%d warnings over %d rounds of the same unscoped series; want one:\n%s", n, rounds, logs.String())
	}
}
