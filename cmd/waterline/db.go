package main

import (
	"context"

	"github.com/waterline-dev/waterline/store"
)

// openStore opens (and migrates) the configured database: every command
// needs the current schema.
func openStore(ctx context.Context, c config) (*store.Store, error) {
	if err := c.requireDatabase(); err != nil {
		return nil, err
	}
	return store.Open(ctx, c.DatabaseURL)
}
