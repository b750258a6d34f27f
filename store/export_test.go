package store

import (
	"context"
	"time"
)

// DB is the connection a Store runs on, for the store's own tests that
// check rows with plain SQL; nothing outside the store needs it.
func (s *Store) DB() DB { return s.db }

// Setting reads a run-time parameter of the lease's own session.
func (l *Lease) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := l.conn.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// SetDropLockTimeout shortens the wait for the lock a partition drop
// needs; it returns the previous value.
func SetDropLockTimeout(d time.Duration) time.Duration {
	old := dropLockTimeout
	dropLockTimeout = d
	return old
}
