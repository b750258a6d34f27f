package pull

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// kube-state-metrics is missing from Prometheus for 17 minutes (steps
// 96–164 of the fleet: a restart, a scrape gap), so one live round's pod
// join — its window and the 5-minute look-back — finds no pod at all. The
// replica curves that round pulls keep the model, version and node the
// pods had: each replica's curve is one series, every point stored once,
// not a second series without model and node holding that round's points
// (and, through the next round's overlap, some points twice).
func TestReplicaIdentitySurvivesKubeStateMetricsGap(t *testing.T) {
	f := eventsFleet()
	var buf bytes.Buffer
	if err := f.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	gapFrom, gapTo := f.Start.Add(96*f.Step), f.Start.Add(164*f.Step)
	var om strings.Builder
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if strings.HasPrefix(line, "kube_pod_info{") || strings.HasPrefix(line, "kube_pod_labels{") {
			fs := strings.Fields(line)
			sec, err := strconv.ParseFloat(fs[len(fs)-1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if at := time.UnixMilli(int64(sec * 1000)); !at.Before(gapFrom) && at.Before(gapTo) {
				continue
			}
		}
		om.WriteString(line)
	}
	prom := promtest.Run(t, strings.NewReader(om.String()))
	st, pool := storetest.NewWithPool(t)
	ctx := context.Background()

	cfg, err := ParseConfig("test.yaml", []byte("lookback: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	var now time.Time // read by the round's goroutines, set between rounds
	p, err := New(cfg, Backend{URL: prom.URL}, st, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// Live rounds every 5 minutes of the fleet's hour, from 10 minutes in.
	for k := 2; k <= 12; k++ {
		now = f.Start.Add(time.Duration(k)*5*time.Minute + 30*time.Second)
		if err := p.Tick(ctx); err != nil {
			t.Fatalf("round at %v: %v", now.Sub(f.Start), err)
		}
	}

	cs, err := st.Curves(ctx, store.CurveFilter{From: f.Start, To: f.End().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	perReplica := map[string][]string{} // role|replica|stage → the keys stored
	for _, c := range cs {
		if c.Level != correlate.LevelReplica {
			continue
		}
		if c.Scope.Model == "" || c.Scope.Version == "" || c.Scope.Node == "" {
			t.Errorf("replica curve without model/version/node (%d points from %v): %s",
				len(c.Points), c.Points[0].Time().Sub(f.Start), c.Key())
		}
		k := fmt.Sprintf("%s|%s|%s", c.Role, c.Scope.Replica, c.Stage)
		perReplica[k] = append(perReplica[k], c.Key())
	}
	if len(perReplica) == 0 {
		t.Fatal("no replica curves pulled")
	}
	for k, keys := range perReplica {
		if len(keys) != 1 {
			t.Errorf("%s split over %d series: %v", k, len(keys), keys)
		}
	}
	// The round that found no pod (window 33–40 min) stored its points
	// with the next: embed-cccc-1's GPU curve has them under its identity,
	// and chat-bbbb-3, started in the gap, is one curve from its first step.
	for _, c := range []struct {
		key string
		at  time.Time
	}{
		{"gpu_util|replica|model=embed version=v5 replica=embed-cccc-1 node=n2", gapTo.Add(-2 * time.Minute)},
		{"gpu_util|replica|model=chat version=v2 replica=chat-bbbb-3 node=n2", f.Start.Add(144 * f.Step)},
	} {
		if got := curveAt(t, cs, c.key, c.at); !near(got, 50) {
			t.Errorf("%s at %v = %v, want 50", c.key, c.at.Sub(f.Start), got)
		}
	}
	var n, distinct int
	// Every replica point, once.
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (s.role, s.replica, s.stage, p.time))
		FROM points p JOIN series s ON s.id = p.series_id WHERE s.level = 'replica'`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n != distinct {
		t.Errorf("%d replica points stored for %d (replica curve, time) pairs: some stored twice", n, distinct)
	}
}

// kube-state-metrics gone for good (from step 96 on): the replica curves
// are held back identityWait at most, then stored without their pods'
// model and version rather than never.
func TestReplicaCurvesNotHeldForEver(t *testing.T) {
	f := eventsFleet()
	var buf bytes.Buffer
	if err := f.WriteOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	var om strings.Builder
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if strings.HasPrefix(line, "kube_pod_") {
			fs := strings.Fields(line)
			sec, err := strconv.ParseFloat(fs[len(fs)-1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if !time.UnixMilli(int64(sec * 1000)).Before(f.Start.Add(96 * f.Step)) {
				continue
			}
		}
		om.WriteString(line)
	}
	prom := promtest.Run(t, strings.NewReader(om.String()))
	st, pool := storetest.NewWithPool(t)
	ctx := context.Background()
	cfg, err := ParseConfig("test.yaml", []byte("lookback: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	var now time.Time
	p, err := New(cfg, Backend{URL: prom.URL}, st, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for k := 2; k <= 12; k++ {
		now = f.Start.Add(time.Duration(k)*5*time.Minute + 30*time.Second)
		if err := p.Tick(ctx); err != nil {
			t.Fatalf("round at %v: %v", now.Sub(f.Start), err)
		}
	}
	var last time.Time
	if err := pool.QueryRow(ctx, `SELECT max(p.time) FROM points p JOIN series s ON s.id = p.series_id
		WHERE s.level = 'replica' AND s.role = 'gpu_util'`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if behind := now.Sub(last); behind > identityWait+5*time.Minute {
		t.Errorf("replica gpu_util curves end %v before the last round", behind)
	}
}
