package main

import (
	"context"
	"fmt"
	"io"

	"github.com/waterline-dev/waterline/store"
)

// runMigrate applies the embedded migrations and exits.
func runMigrate(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig("migrate", args, env, stderr, nil)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, c)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, _, _, err := store.MigrationStatus(pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "migrations applied; schema version %d\n", applied)
	return nil
}
