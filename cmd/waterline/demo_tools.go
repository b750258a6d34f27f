package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/waterline-dev/waterline/internal/demo/pgtmp"
	"github.com/waterline-dev/waterline/internal/demo/promrun"
)

// missingPackages lists the Debian packages the demo needs and cannot
// find: prometheus (prometheus and promtool) always, postgresql (initdb,
// pg_ctl) unless DATABASE_URL points at a server.
func missingPackages(needPostgres bool) []string {
	var pkgs []string
	if promrun.LookPath() != nil {
		pkgs = append(pkgs, "prometheus")
	}
	if needPostgres && pgtmp.Installed() != nil {
		pkgs = append(pkgs, "postgresql")
	}
	return pkgs
}

// installPackages installs pkgs with apt when we are root and apt is
// there; otherwise it fails with the exact command to run.
func installPackages(ctx context.Context, pkgs []string) error {
	install := "apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ")
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("missing %s; install with:\n  sudo apt-get update && sudo %s\n(or, for Postgres, set DATABASE_URL to a server you have)",
			strings.Join(pkgs, " and "), install)
	}
	for _, args := range [][]string{{"update", "-qq"}, strings.Fields(install)[1:]} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 2000))
		}
	}
	if left := missingPackages(slices.Contains(pkgs, "postgresql")); len(left) > 0 {
		return fmt.Errorf("installed %s but still missing %s", strings.Join(pkgs, " "), strings.Join(left, " "))
	}
	return nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
