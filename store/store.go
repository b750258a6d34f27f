// Package store is Waterline's only door to Postgres: queries, bulk COPY,
// day partitions, retention and the migration runner. Every method takes a
// context first and returns errors wrapped with "store:"; ErrNotFound and
// ErrConflict are the sentinels callers may test for.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is what Store needs from pgx. *pgxpool.Pool and pgx.Tx both satisfy it,
// so a Store can run inside a caller's transaction (tests roll one back).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Store runs Waterline's queries against a DB.
type Store struct {
	db    DB
	parts *partitionCache
	pool  *pgxpool.Pool // set by Open, which owns it
}

// New returns a Store over db.
func New(db DB) *Store { return &Store{db: db, parts: newPartitionCache()} }

// InTx runs fn inside a transaction; inside an existing transaction it uses
// a savepoint. fn's error rolls everything back and is returned as is.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		return fn(&Store{db: tx, parts: s.parts})
	})
}

var (
	// ErrNotFound means the requested row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the write collides with existing state.
	ErrConflict = errors.New("conflict")
)

// translate maps pgx errors onto the store's sentinels, once, at the boundary.
func translate(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return fmt.Errorf("%w: %s", ErrConflict, pgErr.Detail)
	}
	return err
}

// wrap prefixes err with the operation name, translating pgx sentinels.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	err = translate(err)
	if errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// IsUniqueViolation reports whether err is a Postgres unique violation.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// IsUnavailable reports whether err means the database could not be
// reached or went away mid-operation (a restart, a fail-over, a dropped
// connection): nothing was committed, and the same call may succeed later.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var (
		pgErr   *pgconn.PgError
		connErr *pgconn.ConnectError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &connErr):
		// Refused at connect, whatever the server said why: out of
		// connection slots (53300), the database closed to connections
		// (55000), starting up (57P03).
		return true
	case errors.As(err, &pgErr):
		// 08: connection exception; 57P: operator intervention (shutdown,
		// crash, cannot connect now); 53300: too many connections;
		// 40001/40P01: a serialization failure or deadlock rolled the
		// transaction back.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") ||
			pgErr.Code == "53300" || pgErr.Code == "40001" || pgErr.Code == "40P01"
	case errors.As(err, &netErr):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	return pgconn.SafeToRetry(err)
}
