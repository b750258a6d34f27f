package store

import (
	"context"
	"time"
)

// Retention says how long raw data is kept; zero keeps it forever.
type Retention struct {
	Samples time.Duration
	Points  time.Duration
}

// Maintain creates partitions for today and the next aheadDays days and
// drops those past retention. Change events and the webhook delivery log
// follow the points' retention (events are the curves' context; a frozen
// incident keeps its own copy): they are rows, deleted in batches. It is
// idempotent; serve calls it periodically.
func (s *Store) Maintain(ctx context.Context, now time.Time, aheadDays int, r Retention) (dropped int, err error) {
	for _, table := range []string{TableSamples, TablePoints} {
		var days []time.Time
		for i := 0; i <= aheadDays; i++ {
			days = append(days, now.Add(time.Duration(i)*24*time.Hour))
		}
		if err := s.EnsurePartitions(ctx, table, days...); err != nil {
			return dropped, err
		}
	}
	for table, keep := range map[string]time.Duration{TableSamples: r.Samples, TablePoints: r.Points} {
		if keep <= 0 {
			continue
		}
		cutoff, err := s.RetentionCutoff(ctx, table, keep, now)
		if err != nil {
			return dropped, err
		}
		if cutoff.IsZero() {
			continue
		}
		n, err := s.DropPartitionsBefore(ctx, table, cutoff)
		dropped += n
		if err != nil {
			return dropped, err
		}
		if table == TablePoints {
			if err := s.deleteBefore(ctx, cutoff); err != nil {
				return dropped, err
			}
			if _, err := s.PruneSeries(ctx, cutoff); err != nil {
				return dropped, err
			}
		}
	}
	return dropped, nil
}

// deleteBefore deletes the events before cutoff and the settled webhook
// deliveries made before it of incidents resolved before it, 10,000 rows
// a statement (short locks).
func (s *Store) deleteBefore(ctx context.Context, cutoff time.Time) error {
	for _, q := range []string{
		`DELETE FROM events WHERE ctid IN (SELECT ctid FROM events WHERE time < $1 LIMIT 10000)`,
		// Only of incidents resolved before the cutoff: the notifier reads
		// an incident's settled deliveries to know what it has sent (an
		// 'incident.opened' gone would go out again).
		`DELETE FROM webhook_deliveries WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN incidents i ON i.id = d.incident_id
			WHERE d.status <> 'pending' AND d.created_at < $1 AND i.status = 'resolved' AND i.updated_at < $1 LIMIT 10000)`,
	} {
		for {
			tag, err := s.db.Exec(ctx, q, cutoff)
			if err != nil {
				return wrap("retention", err)
			}
			if tag.RowsAffected() < 10000 {
				break
			}
		}
	}
	return nil
}

// PruneSeries deletes the series whose newest point is before cutoff and
// that hold no point any more (retention dropped them): every rollout
// names new pods, and their series would otherwise pile up for ever,
// slowing every series lookup. Series a writer holds (UpsertPoints) are
// skipped, not waited for; a writer with a deleted series' cached id gets
// ErrSeriesGone. It returns how many it deleted, 1,000 a statement.
func (s *Store) PruneSeries(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.db.Exec(ctx, `
			DELETE FROM series WHERE id IN (
				SELECT id FROM series s WHERE last_point < $1
				  AND NOT EXISTS (SELECT 1 FROM points p WHERE p.series_id = s.id)
				ORDER BY id LIMIT 1000 FOR UPDATE SKIP LOCKED)`, cutoff)
		if err != nil {
			return total, wrap("prune series", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 1000 {
			return total, nil
		}
	}
}
