package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Day-partitioned tables. Partitions are named <table>_YYYYMMDD and cover one
// UTC day; they are created before the first write into that day and ahead
// of time by Maintain, and dropped whole by retention.
const (
	TableSamples = "samples"
	TablePoints  = "points"
)

// partitionCache remembers partitions known to exist, so the hot ingest path
// does not issue DDL (which locks the parent) once a day is there.
type partitionCache struct {
	mu    sync.Mutex
	known map[string]bool
}

func newPartitionCache() *partitionCache { return &partitionCache{known: map[string]bool{}} }

func partitionName(table string, day time.Time) string {
	return table + "_" + day.UTC().Format("20060102")
}

// EnsurePartitions creates the day partitions of table that cover times.
// Concurrent callers are serialised by an advisory lock, so "already exists"
// races cannot fail an ingest.
func (s *Store) EnsurePartitions(ctx context.Context, table string, times ...time.Time) error {
	days := map[time.Time]bool{}
	for _, t := range times {
		days[t.UTC().Truncate(24*time.Hour)] = true
	}
	var missing []time.Time
	s.parts.mu.Lock()
	for d := range days {
		if !s.parts.known[partitionName(table, d)] {
			missing = append(missing, d)
		}
	}
	s.parts.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].Before(missing[j]) })
	// DDL runs in its own short transaction on the pool, never inside the
	// caller's ingest transaction: a failed ingest must not undo it, and the
	// parent's lock must be held as briefly as possible.
	err := pgxBeginOwn(ctx, s.db, func(tx DB) error {
		// Creating a partition takes an exclusive lock on the parent, and
		// while it waits for one every new writer queues behind it: give up
		// after a while (the caller's request fails and is retried) rather
		// than stall all ingest behind a long transaction.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('waterline.partitions.' || $1))`, table); err != nil {
			return err
		}
		for _, d := range missing {
			name := partitionName(table, d)
			sql := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
				name, table, d.Format(time.RFC3339), d.Add(24*time.Hour).Format(time.RFC3339))
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return wrap("ensure partitions", err)
	}
	s.parts.mu.Lock()
	for _, d := range missing {
		s.parts.known[partitionName(table, d)] = true
	}
	s.parts.mu.Unlock()
	return nil
}

// partitionKnown reports whether the partition of table for day is known to
// exist, without touching the database.
func (s *Store) partitionKnown(table string, day time.Time) bool {
	s.parts.mu.Lock()
	defer s.parts.mu.Unlock()
	return s.parts.known[partitionName(table, day)]
}

// forgetPartitions drops what the cache knows about table, after a write
// found a partition missing that the cache said was there.
func (s *Store) forgetPartitions(table string) {
	s.parts.mu.Lock()
	defer s.parts.mu.Unlock()
	for name := range s.parts.known {
		if strings.HasPrefix(name, table+"_") {
			delete(s.parts.known, name)
		}
	}
}

// noPartitionSeen forgets what the cache knows about table when a write
// failed for want of a partition the cache said was there (another
// replica's retention dropped it): the caller's next EnsurePartitions
// creates it again.
func (s *Store) noPartitionSeen(table string, err error) {
	if isNoPartition(err) {
		s.forgetPartitions(table)
	}
}

// Partitions lists the day partitions of table, oldest first.
func (s *Store) Partitions(ctx context.Context, table string) ([]time.Time, error) {
	rows, err := s.db.Query(ctx, `
		SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = $1 ORDER BY c.relname`, table)
	if err != nil {
		return nil, wrap("list partitions", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, wrap("list partitions", err)
		}
		d, err := time.Parse("20060102", strings.TrimPrefix(name, table+"_"))
		if err == nil {
			out = append(out, d)
		}
	}
	return out, wrap("list partitions", rows.Err())
}

// Dropping a partition needs its parent's exclusive lock, and while a
// drop waits for it behind a long reader (a dump, a big analysis) every
// later query on the table — ingest, pages — queues behind the drop. So
// each attempt waits only dropLockTimeout, and a drop that did not get
// the lock tries again after dropPause, dropTries times in all: nothing
// queues for more than a quarter second (a 10 s wait held every samples
// read and write for 10 s, and small ingests failed). Variables for the
// tests.
var (
	dropLockTimeout = 250 * time.Millisecond
	dropTries       = 24
	dropPause       = 5 * time.Second
)

// DropPartitionsBefore drops every day partition of table that ends at or
// before cutoff and returns how many it dropped. Dropping a partition is
// instant and leaves no bloat, unlike DELETE.
func (s *Store) DropPartitionsBefore(ctx context.Context, table string, cutoff time.Time) (int, error) {
	days, err := s.Partitions(ctx, table)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range days {
		if d.Add(24 * time.Hour).After(cutoff) {
			continue
		}
		name := partitionName(table, d)
		var err error
		for try := 1; ; try++ {
			err = pgxBeginOwn(ctx, s.db, func(tx DB) error {
				if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, dropLockTimeout.Milliseconds())); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+name)
				return err
			})
			if !isLockTimeout(err) || try >= dropTries {
				break
			}
			select {
			case <-ctx.Done():
				return n, wrap("drop "+name, ctx.Err())
			case <-time.After(dropPause):
			}
		}
		if err != nil {
			return n, wrap("drop "+name, err)
		}
		s.parts.mu.Lock()
		delete(s.parts.known, name)
		s.parts.mu.Unlock()
		n++
	}
	return n, nil
}

// RetentionCutoff returns the time before which data of table may be
// dropped: retention counted back from the newest data or now, whichever is
// earlier. Like Prometheus, counting from the newest data means a backfill
// of old history is not dropped the moment it lands. Empty partitions
// (created ahead of time) do not count as data.
func (s *Store) RetentionCutoff(ctx context.Context, table string, retention time.Duration, now time.Time) (time.Time, error) {
	days, err := s.Partitions(ctx, table)
	if err != nil {
		return time.Time{}, err
	}
	for i := len(days) - 1; i >= 0; i-- {
		var has bool
		if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+partitionName(table, days[i])+`)`).Scan(&has); err != nil {
			return time.Time{}, wrap("retention cutoff", err)
		}
		if !has {
			continue
		}
		newest := days[i].Add(24 * time.Hour)
		if now.Before(newest) {
			newest = now
		}
		return newest.Add(-retention), nil
	}
	return time.Time{}, nil
}

// pgxBeginOwn runs fn in a transaction of its own. On a pool that is a new
// transaction; inside a transaction it is a savepoint (tests).
func pgxBeginOwn(ctx context.Context, db DB, fn func(tx DB) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// isLockTimeout says whether err is Postgres giving up on a lock
// (lock_timeout: SQLSTATE 55P03).
func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
