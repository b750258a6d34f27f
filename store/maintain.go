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
// drops those past retention. It is idempotent; serve calls it periodically.
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
	}
	return dropped, nil
}
