package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/internal/freeport"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/store"
)

// demoServer is the in-process `waterline serve` and how to reach it.
type demoServer struct {
	base   string // e.g. http://127.0.0.1:8080
	public string // WATERLINE_PUBLIC_URL
	token  string // an admin token
	api    *apiClient
	dbURL  string
	prom   string
	st     *store.Store
}

// serve migrates the database, creates an admin token and runs `waterline
// serve` in this process — the same wiring as the real command, with the
// pull loop and the background detector off (the demo pulls its range
// once and opens its own incident) — and waits until it is ready. Its log
// goes to waterline.log in the demo directory.
func (d *demo) serve(ctx context.Context, dbURL, promURL string) (*demoServer, error) {
	return d.serveWith(ctx, dbURL, promURL, map[string]string{
		"WATERLINE_PULL_INTERVAL":   "0",
		"WATERLINE_DETECT_INTERVAL": "0",
		"WATERLINE_CONFIG":          "", // the built-in preset reads the simulated exporters
	}, "")
}

// serveWith is serve with its own settings over the demo's (a live run
// turns the pull loop and the detector on); what says so on the step's
// line.
func (d *demo) serveWith(ctx context.Context, dbURL, promURL string, settings map[string]string, what string) (*demoServer, error) {
	d.p.step("waterline serve")
	addr, err := pickAddr(d.opts.addr)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	d.atExit(st.Close)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	token, tok, err := st.CreateToken(ctx, "demo", store.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	// The admin token is printed for this run only: in a DATABASE_URL the
	// demo does not own, it would otherwise stay live after Ctrl-C. It
	// is revoked after the server stops (registered before it, so run
	// after), while the store is still open.
	d.atExit(func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := st.RevokeToken(rctx, tok.ID, "", time.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
			d.p.note("revoking the demo's admin token (revoke it with 'waterline token revoke %d'): %v", tok.ID, err)
		}
	})
	public := d.env("WATERLINE_PUBLIC_URL")
	if public == "" {
		public = "http://" + addr
	}
	overlay := map[string]string{
		"DATABASE_URL":         dbURL,
		"PROMETHEUS_URL":       promURL,
		"WATERLINE_ADDR":       addr,
		"WATERLINE_PUBLIC_URL": public,
		// Receivers for a demo are on this machine.
		"WATERLINE_WEBHOOK_ALLOW_PRIVATE": "true",
	}
	for k, v := range settings {
		overlay[k] = v
	}
	env := func(k string) string {
		if v, ok := overlay[k]; ok {
			return v
		}
		return d.env(k)
	}
	logf, err := os.Create(filepath.Join(d.dir, "waterline.log"))
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- runServe(sctx, nil, env, io.Discard, logf) }()
	d.atExit(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				d.p.note("waterline serve: %v", err)
			}
		case <-time.After(40 * time.Second):
			d.p.note("waterline serve did not stop within 40s")
		}
		logf.Close()
	})
	s := &demoServer{base: "http://" + addr, public: public, token: token, dbURL: dbURL, prom: promURL, st: st}
	s.api = newAPIClient(s.base, token)
	if err := waitReady(ctx, s.base+"/readyz", done); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	if what != "" {
		what = "; " + what
	}
	d.p.done("on %s (migrated; admin token created; log in waterline.log%s)", s.base, what)
	return s, nil
}

// pickAddr returns addr when it can be listened on, else a free loopback
// port (a second demo, or something else on 8080, must not stop this
// one). A ":0" port is a free one from internal/freeport, which another
// socket will not take before serve binds it.
func pickAddr(addr string) (string, error) {
	if _, port, err := net.SplitHostPort(addr); err == nil && port != "0" {
		if ln, err := net.Listen("tcp", addr); err == nil {
			defer ln.Close()
			return ln.Addr().String(), nil
		}
	}
	free, err := freeport.Addr()
	if err != nil {
		return "", fmt.Errorf("no free port: %w", err)
	}
	return free, nil
}

// waitReady polls url until it answers 200, serve exits, or a minute
// passes.
func waitReady(ctx context.Context, url string, exited <-chan error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("waterline serve exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waterline serve not ready at %s after a minute", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// push sends the fleet's change events (as a CD system would) and its
// request samples (as an instrumented gateway would) through the API.
func (d *demo) push(ctx context.Context, s *demoServer, fl *demoFleet) error {
	d.p.step("push events")
	var ev bytes.Buffer
	if err := fl.f.WriteEventsNDJSON(&ev); err != nil {
		return err
	}
	r, err := s.api.postNDJSON(ctx, "/api/v1/events", ev.Bytes())
	if err != nil {
		return err
	}
	d.p.done("POST /api/v1/events: %d accepted (deploys and config changes, as a CD system sends them)", r.Accepted)

	d.p.step("push samples")
	var buf bytes.Buffer
	n, err := fl.f.WriteSamplesNDJSON(&buf)
	if err != nil {
		return err
	}
	const batch = 5000
	r, err = s.api.postSamples(ctx, buf.Bytes(), batch, func(sent int) {
		d.p.update("%d%% (%d of %d)", 100*sent/max(n, 1), sent, n)
	})
	if err != nil {
		return err
	}
	d.p.done("POST /api/v1/samples: %s accepted in %d requests (per-stage timings, as a gateway sends them)",
		thousands(int64(r.Accepted)), (n+batch-1)/batch)
	return nil
}

// pull pulls the fleet's window from Prometheus into Postgres, as
// `waterline pull --from --to` does.
func (d *demo) pull(ctx context.Context, s *demoServer, fl *demoFleet) error {
	d.p.step("pull")
	cfg, err := pull.LoadConfig("")
	if err != nil {
		return err
	}
	p, err := pull.New(cfg, pull.Backend{URL: s.prom}, s.st, pull.Options{})
	if err != nil {
		return err
	}
	pr, err := p.History(ctx, fl.desc.Start, fl.desc.End, func(pr pull.Progress) {
		d.p.update("%d/%d sources, %d points", pr.SourcesDone, pr.Sources, pr.Points)
	})
	if err != nil {
		return err
	}
	// As `waterline pull` does: the spikes of the pulled range are
	// recorded, so the home page lists them under "Recent spikes".
	n, err := diagnose.NewDetector(s.st, diagnose.DetectorOptions{SLO: cfg.SLOFor}).Record(ctx, fl.desc.Start, fl.desc.End)
	if err != nil {
		return err
	}
	d.p.done("%s – %s: %s points from %d sources, %d events derived from kube-state-metrics; %d latency spikes recorded",
		fmtTime(fl.desc.Start), fmtTime(fl.desc.End), thousands(pr.Points), pr.Sources, pr.Events, n)
	return nil
}
