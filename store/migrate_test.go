package store_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/migrations"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A migration whose process died half-way (a replica SIGKILLed while its
// migration waited for a table lock; a statement cancelled) leaves the
// version dirty. Each migration is one transaction, so the schema is at
// the version before or — Postgres finishes a statement whose client has
// gone — at the dirty one. Every replica of every version refused to
// start ("Dirty database version N. Fix and force version.", with no
// force in the binary and nothing in the README), and every running one
// went unready: one kill took the whole fleet down. The next start runs
// the migration again instead.
func TestMigrateRedoesADirtyMigration(t *testing.T) {
	t.Parallel()
	latest, err := store.LatestMigration()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		applied bool // whether the dirty migration's transaction committed
	}{
		{"migration committed, bookkeeping lost", true},
		{"migration rolled back", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.NewDatabase(t)
			ctx := context.Background()
			conn := connect(t, dbURL)
			want := schemaOf(t, conn)
			if !tc.applied {
				exec(t, conn, downSQL(t, latest))
			}
			exec(t, conn, `UPDATE schema_migrations SET dirty = true`)

			st, err := store.Open(ctx, dbURL)
			if err != nil {
				t.Fatalf("open a schema left dirty at %d: %v", latest, err)
			}
			defer st.Close()
			if err := st.Ready(ctx); err != nil {
				t.Errorf("ready after the dirty migration ran again: %v", err)
			}
			if v, dirty := versionOf(t, conn); v != latest || dirty {
				t.Errorf("schema version %d (dirty=%v) after open, want %d clean", v, dirty, latest)
			}
			if got := schemaOf(t, conn); got != want {
				t.Errorf("schema after the dirty migration ran again differs from a clean migration's:\n%s", diffLines(want, got))
			}
		})
	}
}

// While a newer replica migrates (golang-migrate marks the version dirty
// before it runs the migration, and a lock wait can make that seconds
// long), or after a newer migration failed, the schema is at least this
// binary's: an older replica stays ready and starts. It went unready —
// every older replica left the load balancer at once during a rolling
// upgrade — and one starting failed on the dirty version.
func TestOlderReplicaWhileANewerOneMigrates(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	ctx := context.Background()
	latest, err := store.LatestMigration()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn := connect(t, dbURL)
	exec(t, conn, fmt.Sprintf(`UPDATE schema_migrations SET version = %d, dirty = true`, latest+1))
	if err := st.Ready(ctx); err != nil {
		t.Errorf("running replica while a newer one migrates: %v", err)
	}
	st2, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("replica starting while a newer one migrates: %v", err)
	}
	st2.Close()
	if v, dirty := versionOf(t, conn); v != latest+1 || !dirty {
		t.Errorf("schema version %d (dirty=%v), want the newer replica's %d left as it is", v, dirty, latest+1)
	}
	// This binary's own migration dirty: its schema may lack it.
	exec(t, conn, fmt.Sprintf(`UPDATE schema_migrations SET version = %d, dirty = true`, latest))
	if err := st.Ready(ctx); err == nil {
		t.Error("ready while this binary's own migration is dirty")
	}
}

// A migration waits for its table's lock behind a long transaction (a
// webhook sender holds one over its send, up to 10 s; a dump; a big
// read). While it waits, every later query on that table queues behind
// it: the running replicas' pages and API stalled for as long as the
// longest transaction (8.8 s measured for GET /api/v1/webhooks behind
// migration 20). Each attempt now waits briefly and tries again.
func TestMigrateDoesNotQueueQueriesBehindALock(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	ctx := context.Background()
	latest, err := store.LatestMigration()
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbURL)
	exec(t, conn, downSQL(t, latest))
	exec(t, conn, fmt.Sprintf(`UPDATE schema_migrations SET version = %d`, latest-1))
	var tables []string
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}

	// The long transaction: a reader of every table.
	holder := connect(t, dbURL)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(tables, ", ")+` IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}

	opened := make(chan error, 1)
	go func() {
		st, err := store.Open(ctx, dbURL)
		if err == nil {
			st.Close()
		}
		opened <- err
	}()
	// Let the migration reach its lock wait.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var waiting bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
	}

	// A running replica's read of the tables.
	counts := make([]string, len(tables))
	for i, tb := range tables {
		counts[i] = `(SELECT count(*) FROM ` + tb + `)`
	}
	reader := connect(t, dbURL)
	rctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	start := time.Now()
	_, err = reader.Exec(rctx, `SELECT `+strings.Join(counts, " + "))
	if waited := time.Since(start); err != nil || waited > 3*time.Second {
		t.Errorf("a read waited %s behind the migration's lock wait (%v)", waited.Round(time.Millisecond), err)
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("migrate once the lock was free: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("migrate did not finish once the lock was free")
	}
	if v, dirty := versionOf(t, conn); v != latest || dirty {
		t.Errorf("schema version %d (dirty=%v), want %d clean", v, dirty, latest)
	}
}

// The redo of a dirty migration relies on migrations running again
// harmlessly; those from 14 on are written so (IF NOT EXISTS), and every
// new one must be.
func TestMigrationsRunAgain(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	ctx := context.Background()
	latest, err := store.LatestMigration()
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbURL)
	want := schemaOf(t, conn)
	exec(t, conn, `UPDATE schema_migrations SET version = 13`)
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("migrations 14..%d run again: %v", latest, err)
	}
	st.Close()
	if got := schemaOf(t, conn); got != want {
		t.Errorf("schema after migrations ran again:\n%s", diffLines(want, got))
	}
}

func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func exec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func versionOf(t *testing.T, c *pgx.Conn) (uint, bool) {
	t.Helper()
	var v uint
	var dirty bool
	if err := c.QueryRow(context.Background(), `SELECT version, dirty FROM schema_migrations`).Scan(&v, &dirty); err != nil {
		t.Fatal(err)
	}
	return v, dirty
}

// downSQL is the down migration of version v.
func downSQL(t *testing.T, v uint) string {
	t.Helper()
	names, err := fs.Glob(migrations.FS, fmt.Sprintf("%06d_*.down.sql", v))
	if err != nil || len(names) != 1 {
		t.Fatalf("down migration of %d: %v %v", v, names, err)
	}
	b, err := fs.ReadFile(migrations.FS, names[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// schemaOf describes the public schema: columns, indexes, constraints.
func schemaOf(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	var s string
	err := c.QueryRow(context.Background(), `SELECT string_agg(d, E'\n' ORDER BY d) FROM (
		SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '') AS d
		FROM information_schema.columns WHERE table_schema = 'public' AND table_name NOT LIKE '%\_2%'
		UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT LIKE '%\_2%'
		UNION ALL SELECT conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
		WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text NOT LIKE '%\_2%') x`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func diffLines(want, got string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		w[l] = true
	}
	for _, l := range strings.Split(got, "\n") {
		g[l] = true
	}
	var b strings.Builder
	for l := range w {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for l := range g {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
