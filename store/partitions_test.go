package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

func TestPartitionsAheadAndRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := testclock.Now()

	if _, err := st.Maintain(ctx, now, 2, store.Retention{}); err != nil {
		t.Fatal(err)
	}
	days, err := st.Partitions(ctx, store.TableSamples)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 3 || !days[0].Equal(now.Truncate(24*time.Hour)) {
		t.Fatalf("partitions = %v, want today and 2 days ahead", days)
	}
	// Old history (backfill) gets its own partitions; retention counts back
	// from the newest data, so with data only in the past nothing is dropped.
	old := now.Add(-60 * 24 * time.Hour)
	if err := st.EnsurePartitions(ctx, store.TableSamples, old, old.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(ctx, `INSERT INTO samples (time, request_id, model, total_ms) VALUES ($1, 'a', 'm', 1)`, old.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := st.Maintain(ctx, now, 2, store.Retention{Samples: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("dropped %d partitions of backfilled history, want 0", n)
	}
	// Fresh data today makes the old days fall out of a 7-day retention.
	if _, err := st.DB().Exec(ctx, `INSERT INTO samples (time, request_id, model, total_ms) VALUES ($1, 'b', 'm', 1)`, now); err != nil {
		t.Fatal(err)
	}
	n, err = st.Maintain(ctx, now, 2, store.Retention{Samples: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("dropped %d partitions, want the 2 old ones", n)
	}
	var left int
	if err := st.DB().QueryRow(ctx, `SELECT count(*) FROM samples`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Fatalf("%d samples left, want 1", left)
	}
}

// TestSamplesFloor: the floor ingest refuses samples under is retention's
// cutoff — none on an empty table or without retention, else the newest
// stored day's end (or now, if earlier) minus the retention.
func TestSamplesFloor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := testclock.Now()
	keep := 7 * 24 * time.Hour
	f := st.NewSamplesFloor(keep)
	if err := f.Refresh(ctx, now); err != nil || !f.At().IsZero() {
		t.Fatalf("empty table: floor %s (%v), want none", f.At(), err)
	}
	old := now.Add(-60 * 24 * time.Hour)
	if err := st.EnsurePartitions(ctx, store.TableSamples, old); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(ctx, `INSERT INTO samples (time, request_id, model, total_ms) VALUES ($1, 'a', 'm', 1)`, old); err != nil {
		t.Fatal(err)
	}
	if err := f.Refresh(ctx, now); err != nil {
		t.Fatal(err)
	}
	if want := old.Truncate(24 * time.Hour).Add(24 * time.Hour).Add(-keep); !f.At().Equal(want) {
		t.Errorf("backfilled history only: floor %s, want %s (its day's end minus 7 days)", f.At(), want)
	}
	var none *store.RetentionFloor
	if !none.At().IsZero() || !st.NewSamplesFloor(0).At().IsZero() {
		t.Error("no floor (nil, or retention 0) must read as zero")
	}
}

// The webhook delivery log follows the points' retention: settled
// deliveries made before the cutoff, of incidents resolved before it, go
// (they were kept for ever); pending ones stay, and so do those of an
// open incident, which the notifier reads to know what it has sent.
func TestRetentionPrunesSettledDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	now := testclock.Now()
	// Data now: the cutoff is 30 days before it.
	storetest.WriteCurves(t, st, []correlate.Curve{{Role: correlate.RoleQPS, Level: correlate.LevelModel,
		Scope: correlate.Scope{Model: "m"}, Points: []correlate.Point{{T: now.UnixMilli(), V: 1}}}})
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "x", Start: now.Add(-41 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// Another incident, still open: the notifier reads its settled
	// deliveries to know what it has sent.
	open, err := st.CreateIncident(ctx, store.NewIncident{Title: "still open", Start: now.Add(-41 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	wh, err := st.CreateWebhook(ctx, store.NewWebhook{URL: "https://example.com/h", Secret: "s", Format: "waterline", Events: []string{"incident.opened"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, status := range []string{"delivered", "failed", "pending"} {
		if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: wh.ID, IncidentID: in.ID, Event: "incident.opened",
			AnalysisVersion: i, IdempotencyKey: status, Body: []byte("{}"), DueAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().Exec(ctx, `UPDATE webhook_deliveries SET status = $1, created_at = $2 WHERE idempotency_key = $1`,
			status, now.Add(-40*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: wh.ID, IncidentID: open.ID, Event: "incident.opened",
		IdempotencyKey: "open-one", Body: []byte("{}"), DueAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(ctx, `UPDATE webhook_deliveries SET status = 'delivered', created_at = $1 WHERE idempotency_key = 'open-one'`,
		now.Add(-40*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(ctx, `UPDATE incidents SET status = 'resolved', updated_at = $2 WHERE id = $1`, in.ID, now.Add(-35*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Maintain(ctx, now, 0, store.Retention{Points: 30 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := st.DB().Query(ctx, `SELECT status FROM webhook_deliveries ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	if len(left) != 2 || left[0] != "pending" || left[1] != "delivered" {
		t.Errorf("deliveries left after retention: %v, want the pending one and the open incident's", left)
	}
}

// TestDropWaitsBoundedForItsLock: a partition drop behind a long reader
// waits for the parent's lock a quarter second at a time, so the queries
// arriving meanwhile are not queued behind it for long (a 10 s wait held
// every read and write of the table), and tries again until the reader
// is gone, or gives up after its tries.
func TestDropWaitsBoundedForItsLock(t *testing.T) {
	// Not parallel: it changes package-wide waits.
	ctx := context.Background()
	st, pool := storetest.NewWithPool(t)
	old := testclock.Now().Truncate(24 * time.Hour).Add(-30 * 24 * time.Hour)
	if err := st.EnsurePartitions(ctx, store.TablePoints, old, old.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	defer store.SetDropLock(300*time.Millisecond, 2, 100*time.Millisecond)()
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM points`); err != nil { // a long read: holds its lock
		t.Fatal(err)
	}
	start := time.Now()
	n, err := st.DropPartitionsBefore(ctx, store.TablePoints, old.Add(24*time.Hour))
	if took := time.Since(start); took > 5*time.Second || err == nil || n != 0 {
		t.Fatalf("drop behind a reader, 2 tries: %d dropped, %v, after %s; want a lock timeout within a second or so", n, err, took.Round(time.Millisecond))
	}

	// Many tries: the reader ends after 2 s, the drop gets its lock on a
	// later try; a query arriving meanwhile waits at most one try.
	store.SetDropLock(250*time.Millisecond, 50, 200*time.Millisecond)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		time.Sleep(2 * time.Second)
		_ = reader.Rollback(ctx)
	}()
	defer func() { <-readerDone }() // before the deferred Rollback: one goroutine at a time on the Tx
	done := make(chan error, 1)
	var dropped int
	go func() {
		var err error
		dropped, err = st.DropPartitionsBefore(ctx, store.TablePoints, old.Add(24*time.Hour))
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	var worst time.Duration
	for i := 0; i < 10; i++ {
		q := time.Now()
		if _, err := pool.Exec(ctx, `SELECT count(*) FROM points`); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(q))
		time.Sleep(100 * time.Millisecond)
	}
	if worst > time.Second {
		t.Errorf("a read of the table waited %s behind the drop", worst.Round(time.Millisecond))
	}
	if err := <-done; err != nil || dropped != 1 {
		t.Fatalf("drop once the reader is gone: %d, %v", dropped, err)
	}
}
