// Command pgtmp runs a command against a private PostgreSQL cluster:
//
//	pgtmp [-dir DIR] -- COMMAND [ARGS...]
//
// It starts (or, when DIR already holds one, restarts) a cluster from the
// system's PostgreSQL binaries, runs COMMAND with DATABASE_URL pointing at
// it, forwards SIGINT and SIGTERM to the command, and stops the cluster
// when the command exits. Without -dir the cluster is temporary. It is a
// development tool for `make demo`, not part of the product.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/waterline-dev/waterline/internal/demo/pgtmp"
)

func main() {
	os.Exit(run())
}

func run() int {
	dir := flag.String("dir", "", "directory of the cluster (kept between runs); empty = temporary")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: pgtmp [-dir DIR] -- COMMAND [ARGS...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	pg, err := pgtmp.Start(ctx, *dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := pg.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Fprintf(os.Stderr, "pgtmp: private Postgres at %s (data in %s)\n", pg.URL(), pg.Dir())

	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+pg.URL())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtmp:", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.ExitCode() < 0 { // killed by the signal we forwarded
			return 130
		}
		return exit.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "pgtmp:", err)
	return 1
}
