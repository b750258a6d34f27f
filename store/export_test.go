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

// SetDropLock sets how a partition drop waits for its lock (each try's
// wait, the tries, the pause between them); it returns a function that
// puts the previous values back.
func SetDropLock(wait time.Duration, tries int, pause time.Duration) (restore func()) {
	w, n, p := dropLockTimeout, dropTries, dropPause
	dropLockTimeout, dropTries, dropPause = wait, tries, pause
	return func() { dropLockTimeout, dropTries, dropPause = w, n, p }
}
