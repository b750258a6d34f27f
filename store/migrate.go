package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/waterline-dev/waterline/migrations"
)

// Migrate applies every embedded migration that the database lacks. It is
// safe to call from several processes at once: golang-migrate holds an
// advisory lock while it works. It is not interrupted by ctx: stopping a
// migration half-way is worse than finishing it (our migrations take
// milliseconds), and golang-migrate's graceful stop races with its own
// workers.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m, closeFn, err := newMigrate(pool)
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
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("store: migrate up: %w", err)
	}
	return nil
}

// MigrationStatus reports the applied version, the newest embedded version,
// and whether the last migration failed half-way.
func MigrationStatus(pool *pgxpool.Pool) (applied, latest uint, dirty bool, err error) {
	latest, err = LatestMigration()
	if err != nil {
		return 0, 0, false, err
	}
	m, closeFn, err := newMigrate(pool)
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

func newMigrate(pool *pgxpool.Pool) (*migrate.Migrate, func(), error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return nil, nil, fmt.Errorf("store: migrations source: %w", err)
	}
	// golang-migrate wants a database/sql handle; borrow one over the pool's
	// config so the same credentials and TLS settings apply.
	sqlDB := stdlib.OpenDBFromPool(pool)
	drv, err := migratepgx.WithInstance(sqlDB, &migratepgx.Config{})
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("store: migrate driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("store: migrate init: %w", err)
	}
	return m, func() { m.Close(); sqlDB.Close() }, nil
}

// schemaAhead says whether the database is at a clean version newer than
// every embedded migration.
func schemaAhead(m *migrate.Migrate) (bool, error) {
	latest, err := LatestMigration()
	if err != nil {
		return false, err
	}
	applied, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: migrate version: %w", err)
	}
	return !dirty && applied > latest, nil
}
