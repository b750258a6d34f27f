package store

import (
	"context"
	"sync/atomic"
	"time"
)

// RetentionFloor is the earliest time a table's retention keeps: its
// newest stored day's end (or now) minus the retention, as Maintain
// computes it. Ingest refuses records older than it — maintenance would
// drop them at its next run, after the sender had been told they were
// stored. Refresh reads it; At answers the last reading without I/O, so
// hot paths (a trace assembler under its lock) may ask.
type RetentionFloor struct {
	st    *Store
	table string
	keep  time.Duration
	at    atomic.Int64 // Unix ns; 0: no floor known
}

// NewSamplesFloor is the retention floor of request samples; keep 0 (keep
// forever) has none.
func (s *Store) NewSamplesFloor(keep time.Duration) *RetentionFloor {
	return &RetentionFloor{st: s, table: TableSamples, keep: keep}
}

// NewEventsFloor is the retention floor of change events: they follow
// the points' retention (Maintain); keep 0 has none.
func (s *Store) NewEventsFloor(pointsKeep time.Duration) *RetentionFloor {
	return &RetentionFloor{st: s, table: TablePoints, keep: pointsKeep}
}

// Refresh reads the floor again. On an error the last reading stays.
func (f *RetentionFloor) Refresh(ctx context.Context, now time.Time) error {
	if f.keep <= 0 {
		return nil
	}
	cut, err := f.st.RetentionCutoff(ctx, f.table, f.keep, now)
	if err != nil {
		return err
	}
	if cut.IsZero() {
		f.at.Store(0)
	} else {
		f.at.Store(cut.UnixNano())
	}
	return nil
}

// At is the last floor read (zero: none, such as an empty table).
func (f *RetentionFloor) At() time.Time {
	if f == nil {
		return time.Time{}
	}
	ns := f.at.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
