package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/waterline-dev/waterline/store"
)

const tokenUsage = "usage: waterline token create --name NAME --scope read|write|admin | token list | token revoke NAME|ID"

// runToken implements "waterline token create|list|revoke".
func runToken(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(tokenUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stderr, tokenUsage)
		return errHelp
	case "create":
		return tokenCreate(ctx, args[1:], env, stdout, stderr)
	case "list":
		return tokenList(ctx, args[1:], env, stdout, stderr)
	case "revoke":
		return tokenRevoke(ctx, args[1:], env, stdout, stderr)
	}
	return errors.New(tokenUsage)
}

// tokenCreate is "token create --name N --scope S": it prints the new
// token alone on stdout (so scripts can capture it) and a note on stderr.
// The token cannot be shown again.
func tokenCreate(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	var name, scope string
	c, err := parseConfig("token create", args, env, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "", "what the token is for (shown by 'waterline token list'; revoke by it)")
		fs.StringVar(&scope, "scope", "", "read (GET), write (ingest, incidents, share links) or admin (webhooks)")
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

// tokenList is "token list": every token's id, name, scope, dates and
// whether it is revoked; never a secret (only hashes are stored).
func tokenList(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig("token list", args, env, stderr, nil)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := st.ListTokens(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tCREATED\tLAST USED\tSTATUS")
	day := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04")
	}
	for _, t := range list {
		status := "live"
		if t.RevokedAt != nil {
			status = "revoked " + day(t.RevokedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Scope, day(&t.CreatedAt), day(t.LastUsedAt), status)
	}
	return tw.Flush()
}

// tokenRevoke is "token revoke NAME|ID": a number is an id, anything else
// a name (which must name one live token). The token and its browser
// sessions stop working at once on every server (store.WatchAuth).
func tokenRevoke(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stderr, "usage: waterline token revoke NAME|ID [-database-url URL]")
		return errHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: waterline token revoke NAME|ID [flags]")
	}
	target := args[0]
	c, err := parseConfig("token revoke", args[1:], env, stderr, nil)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	var id int64
	if n, err := strconv.ParseInt(target, 10, 64); err == nil && n > 0 {
		id = n
	}
	tok, err := st.RevokeToken(ctx, id, target, time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no live token %q (see waterline token list)", target)
	case errors.Is(err, store.ErrAmbiguousToken):
		return fmt.Errorf("%q: %w (see waterline token list)", target, err)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "revoked %s token %q (id %d)\n", tok.Scope, tok.Name, tok.ID)
	return nil
}
