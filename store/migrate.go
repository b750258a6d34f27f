package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/waterline-dev/waterline/migrations"
)

// Migrate applies every embedded migration that the database lacks. It is
// safe to call from several processes at once: golang-migrate holds an
// advisory lock while it works. An attempt is not interrupted by ctx:
// stopping a migration half-way is worse than finishing it, and
// golang-migrate's graceful stop races with its own workers; ctx is
// checked between attempts.
//
// Each attempt waits at most migrateLockWait for a lock (a table a
// migration alters, or the migration lock another replica holds): a
// migration waiting behind a long transaction (a webhook send, a dump)
// queued every later query on its table behind it, stalling the running
// replicas as long as that transaction lasted. A migration that did not
// get its lock rolled back; it is tried again after migrateLockPause.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := migrateOnce(pool)
		if !isMigrateLockTimeout(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: migrate: still waiting for a lock (a long transaction holds a table the migration alters: see pg_stat_activity): %w", ctx.Err())
		case <-time.After(migrateLockPause):
		}
	}
}

// How long a migration attempt waits for a lock, and the pause before the
// next attempt.
const (
	migrateLockWait  = time.Second
	migrateLockPause = time.Second
)

func migrateOnce(pool *pgxpool.Pool) error {
	m, drv, closeFn, err := newMigrate(pool, migrateLockWait)
	if err != nil {
		return err
	}
	defer closeFn()
	// A schema newer than this binary's (a newer replica migrated it
	// during a rolling upgrade, or this is a rollback) is left as it is:
	// migrations only add, so the older binary runs on it. golang-migrate
	// fails on a version it does not know, and every older replica that
	// restarted could no longer start.
	if ahead, err := schemaAhead(m); err != nil || ahead {
		return err
	}
	if err := redoDirty(drv); err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		if isMigrateLockTimeout(err) {
			// It rolled back: clean again until the next attempt, so that
			// older replicas (which go unready on a dirty version) wait
			// for it ready.
			_ = redoDirty(drv)
			return err
		}
		return fmt.Errorf("store: migrate up: %w (a failed migration rolled back and runs again at the next start; "+
			"README, Operations, Upgrades: if it keeps failing)", err)
	}
	return nil
}

// redoDirty sets a dirty version (a migration whose process died or whose
// statement failed) back to the one before it, so that Up runs that
// migration again. Under the migration lock nobody else is running it.
// golang-migrate runs a migration file as one statement string, which
// Postgres runs as one transaction: the schema is at the version before,
// or at the dirty one when only the bookkeeping was lost (a process
// killed while its migration waited for a lock: Postgres finishes the
// statement of a client that has gone). Migrations from 14 on run again
// harmlessly (TestMigrationsRunAgain). Left dirty, every replica refused
// to start ("Dirty database version N") and the running ones went
// unready.
func redoDirty(drv database.Driver) (err error) {
	if err := drv.Lock(); err != nil {
		return err
	}
	defer func() {
		if uerr := drv.Unlock(); err == nil && uerr != nil {
			err = uerr
		}
	}()
	v, dirty, err := drv.Version()
	if err != nil || !dirty {
		return err
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("store: migrations source: %w", err)
	}
	defer src.Close()
	prev := database.NilVersion
	if p, err := src.Prev(uint(v)); err == nil {
		prev = int(p)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: migration before %d: %w", v, err)
	}
	return drv.SetVersion(prev, false)
}

// isMigrateLockTimeout says whether a migration attempt gave up waiting
// for a lock (golang-migrate's errors do not unwrap to the driver's).
func isMigrateLockTimeout(err error) bool {
	if err == nil {
		return false
	}
	if isLockTimeout(err) {
		return true
	}
	var de database.Error
	if errors.As(err, &de) && isLockTimeout(de.OrigErr) {
		return true
	}
	var dp *database.Error
	return errors.As(err, &dp) && isLockTimeout(dp.OrigErr)
}

// MigrationStatus reports the applied version, the newest embedded version,
// and whether the last migration failed half-way.
func MigrationStatus(pool *pgxpool.Pool) (applied, latest uint, dirty bool, err error) {
	latest, err = LatestMigration()
	if err != nil {
		return 0, 0, false, err
	}
	m, _, closeFn, err := newMigrate(pool, 0)
	if err != nil {
		return 0, latest, false, err
	}
	defer closeFn()
	applied, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, latest, false, nil
	}
	if err != nil {
		return 0, latest, false, fmt.Errorf("store: migrate version: %w", err)
	}
	return applied, latest, dirty, nil
}

// LatestMigration returns the highest version among the embedded migrations.
func LatestMigration() (uint, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0, fmt.Errorf("store: migrations source: %w", err)
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("store: first migration: %w", err)
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v, nil
		}
		v = next
	}
}

// newMigrate opens golang-migrate on a connection of its own; lockWait > 0
// bounds each wait for a lock there (lock_timeout).
func newMigrate(pool *pgxpool.Pool, lockWait time.Duration) (*migrate.Migrate, database.Driver, func(), error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("store: migrations source: %w", err)
	}
	// golang-migrate wants a database/sql handle; borrow one over the pool's
	// config so the same credentials and TLS settings apply. With a lock
	// wait, a connection outside the pool: its lock_timeout must not stay
	// on a pooled one.
	var sqlDB *sql.DB
	if lockWait > 0 {
		cc := pool.Config().ConnConfig.Copy()
		cc.RuntimeParams["lock_timeout"] = strconv.FormatInt(lockWait.Milliseconds(), 10)
		sqlDB = stdlib.OpenDB(*cc)
	} else {
		sqlDB = stdlib.OpenDBFromPool(pool)
	}
	drv, err := migratepgx.WithInstance(sqlDB, &migratepgx.Config{})
	if err != nil {
		sqlDB.Close()
		return nil, nil, nil, fmt.Errorf("store: migrate driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		sqlDB.Close()
		return nil, nil, nil, fmt.Errorf("store: migrate init: %w", err)
	}
	return m, drv, func() { m.Close(); sqlDB.Close() }, nil
}

// schemaAhead says whether the database is at a version newer than every
// embedded migration. A dirty one counts: a newer replica is migrating it,
// or its migration failed, and the schema is at least this binary's
// either way (an older replica starting then failed on the dirty version).
func schemaAhead(m *migrate.Migrate) (bool, error) {
	latest, err := LatestMigration()
	if err != nil {
		return false, err
	}
	applied, _, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: migrate version: %w", err)
	}
	return applied > latest, nil
}
