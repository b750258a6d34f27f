// Command waterline tells an on-call engineer why ML-inference latency went
// up: it pulls curves and change events from Prometheus into Postgres,
// accepts pushed events, alerts and request samples, and serves the
// analysis as a web UI and a REST API. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errHelp) {
			return // -h: usage asked for and printed
		}
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "waterline:", err)
		}
		os.Exit(1)
	}
}

// errUsage is returned after usage has already been printed, for a
// command line that is not one (exit status 1); errHelp after -h printed
// it on request (exit status 0).
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

// command is one subcommand: its one-line help and its entry point.
type command struct {
	help string
	run  func(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error
}

// commands lists every subcommand. A command is listed only once it works.
var commands = map[string]command{
	"serve":   {"run the HTTP server and the pull loop", runServe},
	"migrate": {"apply database migrations and exit", runMigrate},
	"pull":    {"pull a range of history from Prometheus: pull --from T --to T", runPull},
	"token":   {"manage API tokens: token create --name N --scope read|write|admin, token list, token revoke NAME|ID", runToken},
	"demo":    {"a simulated fleet with an incident, end to end: demo [--scenario release|capacity|…] [--live]", runDemo},
}

// run dispatches to a subcommand. Tests call it directly.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return cmd.run(ctx, args[1:], env, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: waterline <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].help)
	}
	fmt.Fprintln(w, "\nRun 'waterline <command> -h' for the flags of a command; the server's settings are also environment variables (README).")
}
