package store_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// Ready answers within its time limit while another replica holds the
// migration lock (it migrates): it read the schema version through
// golang-migrate, which waits for that lock without a deadline, so every
// /readyz probe hung holding a connection until the pool was gone.
func TestReadyDoesNotWaitForTheMigrationLock(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
	u, _ := url.Parse(dbURL)
	lockID, err := database.GenerateAdvisoryLockId(strings.TrimPrefix(u.Path, "/"), "public", "schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, `SELECT pg_advisory_lock(`+lockID+`)`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Ready(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ready while another replica migrates: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ready waited for the migration lock")
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock(`+lockID+`)`); err != nil {
		t.Fatal(err)
	}
}

// A schema a newer release migrated (a rolling upgrade, a rollback):
// this binary opens it, leaves it as it is and is ready. Every older
// replica went unready when the first new one migrated, and one that
// restarted could not start ("no migration found for version N+1").
func TestSchemaNewerThanTheBinary(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	ctx := context.Background()
	latest, err := store.LatestMigration()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE schema_migrations SET version = $1`, latest+1); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("open a newer schema: %v", err)
	}
	defer st.Close()
	if err := st.Ready(ctx); err != nil {
		t.Errorf("ready on a newer schema: %v", err)
	}
	var v uint
	if err := conn.QueryRow(ctx, `SELECT version FROM schema_migrations`).Scan(&v); err != nil || v != latest+1 {
		t.Errorf("schema version %d after open (%v), want it left at %d", v, err, latest+1)
	}
	// Older than the binary (not migrated yet): not ready.
	if _, err := conn.Exec(ctx, `UPDATE schema_migrations SET version = $1`, latest-1); err != nil {
		t.Fatal(err)
	}
	if err := st.Ready(ctx); err == nil {
		t.Error("ready on an older schema")
	}
	if _, err := conn.Exec(ctx, `UPDATE schema_migrations SET version = $1`, latest); err != nil {
		t.Fatal(err)
	}
}
