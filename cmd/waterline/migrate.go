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
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.SchemaVersion()
	if err != nil {
		return err
	}
	latest, err := store.LatestMigration()
	if err != nil {
		return err
	}
	if applied > latest {
		fmt.Fprintf(stderr, "schema version %d is newer than this binary's (%d): left as it is (a newer release migrated it)\n", applied, latest)
		return nil
	}
	fmt.Fprintf(stderr, "migrations applied; schema version %d\n", applied)
	return nil
}
