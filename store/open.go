package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to the Postgres at databaseURL, checks the connection (so
// that a wrong URL fails at start with one line instead of at the first
// request) and applies the embedded migrations: every command needs the
// current schema. Close releases the pool.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	ConfigurePool(cfg)
	cfg.MaxConnIdleTime = 5 * time.Minute
	// pgxpool's default (4 on a 2-core machine) is too few: an ingest holds
	// a connection while its body streams in, and reads must still get
	// one. The URL's pool_max_conns wins when given.
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres at %s: %w", RedactURL(databaseURL), err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := New(pool)
	s.pool = pool
	return s, nil
}

// ConfigurePool sets what every pool the store reads through needs:
// timestamps come back in UTC (pgx's default is the process's zone, so an
// API answer on a server with TZ set mixed "+09:00" and "Z" times).
//
// An idle pooled connection is pinged before it is handed out; after a
// failover (or a NAT dropping established flows) its server is silent,
// without a FIN or reset, and an unbounded ping held whoever asked (the
// pull loop's and the detector's campaigns) until the kernel gave up on
// the socket, some 15 minutes. The ping is bounded, and a connection that
// does not answer is replaced by a new one.
func ConfigurePool(cfg *pgxpool.Config) {
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = pingTimeout
	}
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		conn.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		if next != nil {
			return next(ctx, conn)
		}
		return nil
	}
}

// pingTimeout bounds the ping of an idle pooled connection.
const pingTimeout = 5 * time.Second

// Close releases the connections of a Store made by Open; on any other
// Store it does nothing (whoever made the pool closes it).
func (s *Store) Close() {
	if s.pool != nil {
		s.pool.Close()
	}
}

// Ready checks what /readyz promises: Postgres answers and the schema is
// at the version this binary embeds.
func (s *Store) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if s.pool == nil {
		return fmt.Errorf("store: not opened with Open")
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres unreachable: %w", err)
	}
	// The version table is read here, with ctx, not through golang-migrate:
	// that takes the migration lock (a replica migrating held every probe,
	// each holding a connection, until the pool was gone) and ignores ctx.
	latest, err := LatestMigration()
	if err != nil {
		return err
	}
	var applied uint
	var dirty bool
	err = s.pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&applied, &dirty)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pgErr) && pgErr.Code == "42P01": // none applied yet
		applied, dirty = 0, false
	case err != nil:
		return fmt.Errorf("schema version: %w", err)
	}
	// Newer than this binary's (a newer replica migrated it mid-upgrade):
	// ready, as migrations only add. Unready, every older replica left the
	// load balancer at once when the first new one started. Dirty there
	// too: a newer replica is running its migration (golang-migrate marks
	// it dirty first), or it failed; the schema has this binary's either
	// way. Dirty at this binary's own version: it may lack that migration.
	if applied < latest || dirty && applied == latest {
		return fmt.Errorf("schema at version %d (dirty=%v), binary expects %d", applied, dirty, latest)
	}
	return nil
}

// SchemaVersion is the migration version the database is at.
func (s *Store) SchemaVersion() (uint, error) {
	if s.pool == nil {
		return 0, fmt.Errorf("store: not opened with Open")
	}
	applied, _, _, err := MigrationStatus(s.pool)
	return applied, err
}

// RedactURL hides a password in a database URL for messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
