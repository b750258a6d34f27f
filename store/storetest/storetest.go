// Package storetest gives tests an isolated, migrated Postgres database.
//
// Tests find Postgres through WATERLINE_TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable): a role that
// may create databases. The first caller in a test binary migrates a
// template database named after a hash of the migrations (shared by every
// package and run); each test then gets a clone of it, which takes ~100 ms
// and lets tests run in parallel. Tests fail, not skip, when Postgres is
// unreachable, so a green run means the database tests ran.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/migrations"
	"github.com/waterline-dev/waterline/store"
)

// AdminURL is the URL of the server tests create their databases on.
func AdminURL() string {
	if u := os.Getenv("WATERLINE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// NewDatabase creates a fresh migrated database and returns its URL. It is
// dropped when the test passes and kept (its name logged) when it fails.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
	if templateErr != nil {
		t.Fatalf("storetest: template database: %v (is Postgres reachable at %s?)", templateErr, redact(AdminURL()))
	}
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("storetest: connect %s: %v", redact(AdminURL()), err)
	}
	defer admin.Close(ctx)
	name := "wl_test_" + randomHex(6)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		// CREATE DATABASE … TEMPLATE fails if someone is connected to the
		// template at that instant; another package may be finishing its
		// migration, so retry briefly.
		_, lastErr = admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, templateName))
		if lastErr == nil {
			break
		}
		time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("storetest: create database: %v", lastErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("storetest: kept database %s for inspection", name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return withDatabase(AdminURL(), name)
}

// NewPool returns a pool on a fresh database (see NewDatabase), closed at
// cleanup before the database is dropped.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewDatabase(t))
	if err != nil {
		t.Fatalf("storetest: parse url: %v", err)
	}
	store.ConfigurePool(cfg)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("storetest: connect: %v", err)
	}
	t.Cleanup(pool.Close) // cleanups run LIFO: the pool closes before the drop
	return pool
}

// New returns a Store on a fresh database.
func New(t testing.TB) *store.Store {
	t.Helper()
	return store.New(NewPool(t))
}

// NewWithPool returns a Store on a fresh database and its pool, for tests
// that also check rows with plain SQL.
func NewWithPool(t testing.TB) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := NewPool(t)
	return store.New(pool), pool
}

// ensureTemplate creates and migrates the template database once per
// migration set. An advisory lock serialises test binaries that start at
// the same time.
func ensureTemplate(ctx context.Context) (string, error) {
	name := "wl_template_" + migrationsHash()[:12]
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(hashtext('waterline.storetest.template'))`); err != nil {
		return "", err
	}
	defer admin.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('waterline.storetest.template'))`)
	var ready bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&ready); err != nil {
		return "", err
	}
	if ready {
		return name, nil
	}
	// A half-built template from a crashed run is not marked datistemplate.
	if _, err := admin.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, withDatabase(AdminURL(), name))
	if err != nil {
		return "", err
	}
	err = store.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s IS_TEMPLATE true`, name)); err != nil {
		return "", err
	}
	return name, nil
}

func migrationsHash() string {
	h := sha256.New()
	names, _ := fs.Glob(migrations.FS, "*.sql")
	sort.Strings(names)
	for _, n := range names {
		b, _ := fs.ReadFile(migrations.FS, n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func withDatabase(rawURL, db string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + db
	return u.String()
}

func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
