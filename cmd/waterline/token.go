package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/waterline-dev/waterline/store"
)

// runToken implements "waterline token create --name N --scope S": it
// prints the new token alone on stdout (so scripts can capture it) and a
// note on stderr. The token cannot be shown again.
func runToken(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: waterline token create --name NAME --scope read|write|admin")
	}
	var name, scope string
	c, err := parseConfig("token create", args[1:], env, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "", "what the token is for (shown in logs and the admin API)")
		fs.StringVar(&scope, "scope", "", "read (GET), write (ingest, incidents) or admin (tokens, webhooks)")
	})
	if err != nil {
		return err
	}
	if strings.TrimSpace(name) == "" {
		return errors.New("--name is required")
	}
	if !store.TokenScope(scope).Valid() {
		return fmt.Errorf("--scope: want read, write or admin, got %q", scope)
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	secret, tok, err := st.CreateToken(ctx, name, store.TokenScope(scope))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, secret)
	fmt.Fprintf(stderr, "created %s token %q (id %d); store it now, it cannot be shown again\n", tok.Scope, tok.Name, tok.ID)
	return nil
}
