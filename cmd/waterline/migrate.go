package main

import (
	"context"
	"fmt"
	"io"
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
	fmt.Fprintf(stderr, "migrations applied; schema version %d\n", applied)
	return nil
}
