// Package pgtmp runs a private PostgreSQL cluster from the system's
// binaries: for `make demo` on a machine without a database, and for tests
// that must restart Postgres without disturbing the shared one.
//
// The cluster listens on 127.0.0.1 on a free port with trust auth, keeps
// its socket in its own directory, and runs with fsync off: it is for
// throwaway data (acknowledged commits survive a Restart, not a machine
// crash). As root, initdb and the server run as the postgres user
// (initdb refuses to run as root).
package pgtmp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/internal/freeport"
)

// Cluster is a running private Postgres.
type Cluster struct {
	dir     string // holds data/, the socket and server.log
	bin     string // directory of initdb, pg_ctl
	port    int
	owned   bool // dir was made by Start and is removed by Stop
	runAs   *user.User
	stopped bool
}

// Start initialises a cluster in dir (unless dir/data already holds one,
// which is then reused) and starts it on a free loopback port. An empty
// dir means a new temporary directory, removed by Stop. The binaries are
// found through $PG_BIN, then the newest /usr/lib/postgresql/*/bin, then
// $PATH.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		if c.runAs, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("pgtmp: running as root needs a postgres user to run the server as: %w", err)
		}
	}
	if dir == "" {
		// Under /tmp rather than t.TempDir(): the postgres user must be able
		// to reach it, and test temp dirs are private to root.
		if dir, err = os.MkdirTemp("", "pgtmp-"); err != nil {
			return nil, fmt.Errorf("pgtmp: %w", err)
		}
		c.owned = true
	} else if err := os.MkdirAll(dir, 0o755); err != nil { // the postgres user must traverse it
		return nil, fmt.Errorf("pgtmp: %w", err)
	}
	if c.dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("pgtmp: %w", err)
	}
	if err := c.chown(c.dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(c.dir, "data", "PG_VERSION")); err != nil {
		if err := c.run(ctx, "initdb", "-D", filepath.Join(c.dir, "data"), "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	if c.port, err = freeport.Port(); err != nil {
		c.cleanup()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.cleanup()
		return nil, err
	}
	return c, nil
}

// URL is the cluster's connection URL (database postgres, user postgres).
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Port is the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// Dir is the directory holding the cluster.
func (c *Cluster) Dir() string { return c.dir }

// Restart stops the server at once (as a crash would: every connection
// drops, uncommitted transactions are lost, recovery runs at start) and
// starts it again on the same port.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.pgctl(ctx, "stop", "-m", "immediate"); err != nil {
		return err
	}
	return c.start(ctx)
}

// Stop shuts the server down and removes the directory if Start made it.
// It is safe to call twice.
func (c *Cluster) Stop() error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.pgctl(ctx, "stop", "-m", "fast")
	c.cleanup()
	return err
}

func (c *Cluster) start(ctx context.Context) error {
	// fsync off is safe while the machine stays up; synchronous_commit
	// stays on, so a commit that was acknowledged survives Restart.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
		c.port, c.dir)
	return c.pgctl(ctx, "start", "-w", "-t", "60", "-l", filepath.Join(c.dir, "server.log"), "-o", opts)
}

func (c *Cluster) pgctl(ctx context.Context, args ...string) error {
	return c.run(ctx, "pg_ctl", append([]string{"-D", filepath.Join(c.dir, "data")}, args...)...)
}

// run runs a Postgres binary, as the postgres user when we are root.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.runAs != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if log, _ := os.ReadFile(filepath.Join(c.dir, "server.log")); name == "pg_ctl" && len(log) > 0 {
			msg += "\nserver.log: " + tail(string(log), 2000)
		}
		return fmt.Errorf("pgtmp: %s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return nil
}

func (c *Cluster) chown(path string) error {
	if c.runAs == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.runAs.Uid)
	gid, _ := strconv.Atoi(c.runAs.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("pgtmp: %w", err)
	}
	return nil
}

func (c *Cluster) cleanup() {
	if c.owned {
		_ = os.RemoveAll(c.dir)
	}
}

// Installed reports whether the PostgreSQL server binaries Start needs
// can be found, with the error Start would give when not.
func Installed() error {
	_, err := findBin()
	return err
}

// findBin locates the directory holding initdb and pg_ctl.
func findBin() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtmp: PostgreSQL server binaries (initdb, pg_ctl) not found: install them (Debian: apt-get install postgresql) or set PG_BIN")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
