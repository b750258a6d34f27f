package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PullLease names the lease of the pull loop, so that the HTTP layer can
// tell whether some replica is pulling.
const PullLease = "pull"

// Lease is a Postgres session advisory lock held on one dedicated
// connection: whoever holds it is the only one doing a job (the pull loop)
// across several serve replicas. When the holder dies its connection
// closes and Postgres releases the lock, so another replica takes over on
// its next try — fail-over needs no coordinator.
type Lease struct {
	conn *pgxpool.Conn
	name string
}

// TryLease tries once to take the lease called name. ok is false when
// another session holds it. The Store must run on a *pgxpool.Pool (a
// session lock cannot live inside a transaction).
func (s *Store) TryLease(ctx context.Context, name string) (l *Lease, ok bool, err error) {
	pool, isPool := s.db.(*pgxpool.Pool)
	if !isPool {
		return nil, false, errors.New("store: lease needs a connection pool, not a transaction")
	}
	// Bounded: a campaign on a dead session must fail and be tried again,
	// not wait on the socket.
	ctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, false, wrap("lease "+name, err)
	}
	// A holder whose host dies or is cut off sends no FIN, and the server
	// would hold its session, and the lock, until the kernel's keepalive
	// gives up: two hours and more. Probing after 10 s of silence, three
	// times 5 s apart, and giving up on unacknowledged writes after 25 s,
	// frees the lease for another replica within half a minute. (Ignored
	// over a Unix socket, where a dead peer is seen at once.)
	if _, err := conn.Exec(ctx, `SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5;
		SET tcp_keepalives_count = 3; SET tcp_user_timeout = 25000`); err != nil {
		conn.Release()
		return nil, false, wrap("lease "+name, err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext('waterline.lease.' || $1))`, name).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, wrap("lease "+name, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return &Lease{conn: conn, name: name}, true, nil
}

// Check reports whether the lease is still held: its connection answers.
// A holder calls it before each round of work and stops when it fails.
//
// A check gets leaseTimeout to answer: a holder cut off from Postgres
// without a FIN or reset (a failover, a NAT dropping the flow) stops
// within it, as another replica may take the lease over by then.
func (l *Lease) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	var held bool
	err := l.conn.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
			AND objid = hashtext('waterline.lease.' || $1)::oid AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, l.name).Scan(&held)
	if err != nil {
		return fmt.Errorf("store: lease %s lost: %w", l.name, err)
	}
	if !held {
		return fmt.Errorf("store: lease %s lost", l.name)
	}
	return nil
}

// leaseTimeout bounds a lease's campaign and each of its checks.
const leaseTimeout = 10 * time.Second

// Release gives the lease up. The connection is closed rather than
// returned to the pool, so no pooled session can keep the lock by mistake.
func (l *Lease) Release() {
	if l == nil || l.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Unlock explicitly: the server ends a closed session asynchronously,
	// and a successor should not have to wait for that.
	_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('waterline.lease.' || $1))`, l.name)
	_ = l.conn.Conn().Close(ctx)
	l.conn.Release()
	l.conn = nil
}

// LeaseHeld reports whether some session currently holds the lease name.
func (s *Store) LeaseHeld(ctx context.Context, name string) (bool, error) {
	var held bool
	err := s.db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
			AND objid = hashtext('waterline.lease.' || $1)::oid AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, name).Scan(&held)
	return held, wrap("lease held", err)
}
