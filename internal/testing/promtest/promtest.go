// Package promtest runs a real Prometheus for tests (internal/demo/promrun,
// with testing.TB plumbing): OpenMetrics text the test generates is
// backfilled with promtool, then Debian's prometheus binary serves it on
// a free loopback port. Stop and Start simulate an outage. Tests only.
package promtest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/demo/promrun"
)

// Prometheus is one Prometheus server over a TSDB directory of its own.
type Prometheus struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234. It stays the same
	// across Stop and Start, once started.
	URL string
	srv *promrun.Server
}

// New prepares a Prometheus (not started) in a temporary directory and
// stops it at cleanup. It fails the test when the binaries are missing:
// CI installs Debian's "prometheus" package, so a skip would hide a gap.
func New(t testing.TB) *Prometheus {
	t.Helper()
	srv, err := promrun.New(t.TempDir())
	if errors.Is(err, promrun.ErrMissing) {
		t.Fatalf("promtest: %v: install it (apt-get install -y prometheus)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &Prometheus{URL: srv.URL, srv: srv}
}

// Run backfills om (OpenMetrics text, ending with "# EOF") and starts
// Prometheus on it.
func Run(t testing.TB, om io.Reader) *Prometheus {
	t.Helper()
	p := New(t)
	p.Backfill(t, om)
	p.Start(t)
	return p
}

// Backfill writes om into the TSDB (see promrun.Server.Backfill).
func (p *Prometheus) Backfill(t testing.TB, om io.Reader) {
	t.Helper()
	if err := p.srv.Backfill(context.Background(), om); err != nil {
		t.Fatal(err)
	}
}

// BackfillWindows backfills [from, to) one 2-hour-aligned window at a
// time (see promrun.Server.BackfillWindows).
func (p *Prometheus) BackfillWindows(t testing.TB, from, to time.Time, write func(w io.Writer, lo, hi time.Time) error) {
	t.Helper()
	if err := p.srv.BackfillWindows(context.Background(), from, to, write); err != nil {
		t.Fatal(err)
	}
}

// Scrape makes Prometheus (before Start) scrape targets every interval
// (see promrun.Server.Scrape).
func (p *Prometheus) Scrape(t testing.TB, interval time.Duration, targets []promrun.Target) {
	t.Helper()
	if err := p.srv.Scrape(interval, targets); err != nil {
		t.Fatal(err)
	}
}

// SetFlags gives Prometheus more command-line flags from its next Start.
func (p *Prometheus) SetFlags(flags ...string) { p.srv.Flags = flags }

// Start runs Prometheus on the TSDB and waits until it is ready.
func (p *Prometheus) Start(t testing.TB) {
	t.Helper()
	if err := p.srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.URL = p.srv.URL // a first start moves off a port another server took
}

// Stop stops Prometheus (no-op when stopped); its data stays for Start.
func (p *Prometheus) Stop(t testing.TB) {
	t.Helper()
	p.srv.Stop()
}
