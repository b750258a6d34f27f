package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// authChannel is the Postgres channel on which a token revocation or a
// logout is announced (at its commit) to every replica, so that caches of
// token and session lookups can be dropped at once.
const authChannel = "waterline_auth"

// notifyAuth announces an auth change; inside a transaction it is sent
// at commit.
func (s *Store) notifyAuth(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `SELECT pg_notify('`+authChannel+`', '')`)
	return err
}

// WatchAuth listens for token revocations and logouts, from any replica
// or the CLI, until ctx ends. listening(true) is called once it listens
// and listening(false) whenever it stops (a lost connection: it retries
// every retry); changed after each announcement. A cache of lookups is
// safe only while listening: a revocation could otherwise go unheard.
// After heartbeat without an announcement it pings the database (waiting
// as long again for the answer): a path that died silently — a partition,
// a NAT dropping the flow — sends no error, and the listener would
// otherwise wait on it for as long as TCP keepalive takes (minutes) with
// the caches serving. The Store must run on a *pgxpool.Pool.
func (s *Store) WatchAuth(ctx context.Context, retry, heartbeat time.Duration, listening func(bool), changed func()) error {
	pool, isPool := s.db.(*pgxpool.Pool)
	if !isPool {
		return errors.New("store: watching auth needs a connection pool, not a transaction")
	}
	for {
		err := s.listenAuth(ctx, pool, heartbeat, listening, changed)
		listening(false)
		if ctx.Err() != nil {
			return nil
		}
		_ = err // the next attempt says whether the database is back
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

func (s *Store) listenAuth(ctx context.Context, pool *pgxpool.Pool, heartbeat time.Duration, listening func(bool), changed func()) error {
	// A connection of its own, not one of the pool's: held for as long as
	// the server runs, a pooled one would shrink the pool for requests
	// (pool_max_conns=1 left none) and keep pool.Close waiting for it.
	cctx, cancel := context.WithTimeout(ctx, 2*heartbeat+5*time.Second)
	conn, err := pgx.ConnectConfig(cctx, pool.Config().ConnConfig.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// As for leases: the server drops a cut-off session within half a
	// minute instead of keeping it for hours.
	lctx, cancel := context.WithTimeout(ctx, 2*heartbeat+5*time.Second)
	_, err = conn.Exec(lctx, `SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5;
		SET tcp_keepalives_count = 3; SET tcp_user_timeout = 25000; LISTEN `+authChannel)
	cancel()
	if err != nil {
		return err
	}
	listening(true)
	for {
		// A wait that times out leaves the connection usable (pgx sets a
		// read deadline and keeps the connection on a timeout).
		wctx, cancel := context.WithTimeout(ctx, heartbeat)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			changed()
			continue
		case ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, heartbeat)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return err
		}
	}
}
