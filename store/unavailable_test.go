package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A Postgres that refuses new connections is unavailable, whatever it
// says why: "too many clients" (53300, the pool of a busy server spent)
// and a database closed to connections for maintenance (55000) answered
// 500 "internal error" and /readyz "see the server log", where a restart
// (57P03) answered 503 "database unreachable".
func TestRefusedConnectionsAreUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	// A database closed to connections.
	dbURL := storetest.NewDatabase(t)
	u, _ := url.Parse(dbURL)
	db := strings.TrimPrefix(u.Path, "/")
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	_, err = pgx.Connect(ctx, dbURL)
	if err == nil || !store.IsUnavailable(err) {
		t.Errorf("connecting to a database closed to connections: %v; IsUnavailable false", err)
	}

	// A role out of connections (as a server out of slots answers).
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	role := "wl_test_limited_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN CONNECTION LIMIT 0`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	u.User = url.User(role)
	u.Path = "/postgres"
	_, err = pgx.Connect(ctx, u.String())
	if err == nil || !strings.Contains(err.Error(), "too many connections") || !store.IsUnavailable(err) {
		t.Errorf("connecting past the connection limit: %v; IsUnavailable false", err)
	}
}
