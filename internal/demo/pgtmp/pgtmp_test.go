package pgtmp_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/internal/demo/pgtmp"
)

func TestClusterStartRestartStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtmp.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The old connection died with the server; a new one sees the data.
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a connection survived the restart")
	}
	conn2, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn2.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: %d rows, %v", n, err)
	}
	conn2.Close(ctx)
	dir := c.Dir()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Stop left %s behind", dir)
	}
	if _, err := pgx.Connect(ctx, c.URL()); err == nil {
		t.Fatal("the cluster still answers after Stop")
	}
}

func TestClusterReusesItsDirectory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "pgtmp-reuse-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := pgtmp.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.URL())
	if err == nil {
		_, err = conn.Exec(ctx, `CREATE TABLE kept (x int)`)
		conn.Close(ctx)
	}
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c2, err := pgtmp.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Stop()
	conn, err = pgx.Connect(ctx, c2.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT * FROM kept`); err != nil {
		t.Fatalf("second start lost the data: %v", err)
	}
}
