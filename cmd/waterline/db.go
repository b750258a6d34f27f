package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/store"
)

// openPool connects to Postgres, checks the connection (so that a wrong URL
// fails at start with one line instead of at the first request) and
// applies the embedded migrations: every command needs the current schema.
func openPool(ctx context.Context, c config) (*pgxpool.Pool, error) {
	if err := c.requireDatabase(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	// pgxpool's default (4 on a 2-core machine) is too few: an ingest holds
	// a connection while its body streams in, and reads must still get
	// one. The URL's pool_max_conns wins when given.
	if !strings.Contains(c.DatabaseURL, "pool_max_conns") {
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
		return nil, fmt.Errorf("connect to Postgres at %s: %w", redactURL(c.DatabaseURL), err)
	}
	if err := store.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
