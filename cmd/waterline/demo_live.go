package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/internal/demo/pgtmp"
	"github.com/waterline-dev/waterline/internal/demo/promrun"
	"github.com/waterline-dev/waterline/sim"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/webhook"
	"github.com/waterline-dev/waterline/wire"
)

// `waterline demo --live`: nothing is replayed. The simulated fleet's
// exporters serve /metrics on the loopback in real time, a real
// Prometheus scrapes them every liveScrape (the hours before now are
// backfilled, so the detector has its baseline), `waterline serve` runs
// with its pull loop and background detector on, the CD events and the
// gateway's samples are pushed through the API as they happen, and a
// webhook receiver prints each delivery. The incident starts
// --inject-after after start-up; only the detector opens it.

const (
	liveScrape         = 5 * time.Second  // Prometheus' scrape interval
	livePull           = 5 * time.Second  // WATERLINE_PULL_INTERVAL
	liveDetect         = 10 * time.Second // WATERLINE_DETECT_INTERVAL
	livePush           = 5 * time.Second  // how often samples and events are pushed
	liveTail           = time.Hour        // simulated after the onset; the exporters stop after it
	liveSteps          = 9                // numbered steps of a live run
	liveWebhookSecret  = "waterline-demo-live-webhook-secret"
	liveDefaultTimeout = 10 * time.Minute // for the detector, after the onset
)

// livePullConfig is the pull configuration of a live run: the built-in
// preset at the scrape's resolution. The first pull reaches back over the
// whole backfilled history, so the detector has its baseline at once.
func livePullConfig(history time.Duration) string {
	return fmt.Sprintf("presets: [inference]\nstep: %ds\ndelay: %ds\noverlap: 30s\nrate_window: 30s\nlookback: %dm\n",
		int(liveScrape/time.Second), int(liveScrape/time.Second), int((history+10*time.Minute)/time.Minute))
}

// liveFleetOptions plans the live fleet: history before start (2 h, or
// 75 min with -small: the detector's hour of baseline and a little), the
// onset inject-after after start, an hour after it; scrapes every 5 s.
func (o demoOptions) liveFleetOptions(start time.Time) (sim.Options, time.Duration) {
	history := 2 * time.Hour
	so := sim.Options{Seed: o.seed, Scenario: o.scenario, Confounders: o.confounders}
	if o.small {
		history = 75 * time.Minute
		so.Models, so.ReplicasPerModel, so.Nodes, so.Tenants, so.TrafficScale = 2, 2, 3, 4, 0.7
	}
	so.Step = liveScrape
	so.Start = start.UTC().Truncate(liveScrape).Add(-history)
	so.Onset = start.Add(o.injectAfter).Sub(so.Start).Round(time.Second)
	so.Duration = (so.Onset + liveTail).Truncate(liveScrape)
	return so, history
}

// liveRun is what a live run keeps between its steps.
type liveRun struct {
	start time.Time // the demo's start-up
	onset time.Time // the injected onset (the truth's)
	hooks *hookReceiver
}

// setUpLive runs the numbered steps of a live run and then waits for the
// detector.
func (d *demo) setUpLive(ctx context.Context) error {
	lr := &liveRun{start: time.Now().UTC()}
	dir, err := os.MkdirTemp("", "waterline-demo-")
	if err != nil {
		return err
	}
	d.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	d.p.note("waterline demo --live: scenario %s, seed %d, confounders %v, injected %s after start-up; working in %s",
		d.opts.scenario, d.opts.seed, onOff(d.opts.confounders), d.opts.injectAfter, dir)

	dbURL, err := d.tools(ctx)
	if err != nil {
		return err
	}
	dbURL, err = d.postgres(ctx, dbURL)
	if err != nil {
		return err
	}

	d.p.step("simulate fleet")
	so, history := d.opts.liveFleetOptions(lr.start)
	f, err := sim.New(so)
	if err != nil {
		return err
	}
	fl := &demoFleet{f: f, desc: f.Description(), truth: f.Truth()}
	if fl.truth.Onset == nil {
		return errors.New("the simulated fleet has no onset")
	}
	lr.onset = *fl.truth.Onset
	f.SampleCount() // runs the simulation now, not inside the first scrape
	for name, v := range map[string]any{"truth.json": fl.truth, "scenario.json": fl.desc} {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(d.dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	d.p.done("%d models on %d GPU nodes, %s of history, scrapes every %s; %s injected at %s",
		len(fl.desc.Models), len(fl.desc.Nodes), fmtSpan(history), liveScrape, fl.truth.Category, fmtTime(lr.onset))

	d.p.step("exporters")
	expAddr, err := d.exporters(fl)
	if err != nil {
		return err
	}
	d.p.done("%s on http://%s/<exporter>/metrics, in real time", strings.Join(sim.Exporters, ", "), expAddr)

	promURL, cut, err := d.livePrometheus(ctx, fl, expAddr)
	if err != nil {
		return err
	}

	cfgPath := filepath.Join(d.dir, "waterline.yaml")
	if err := os.WriteFile(cfgPath, []byte(livePullConfig(history)), 0o644); err != nil {
		return err
	}
	wl, err := d.serveWith(ctx, dbURL, promURL, map[string]string{
		"WATERLINE_PULL_INTERVAL":   livePull.String(),
		"WATERLINE_DETECT_INTERVAL": liveDetect.String(),
		"WATERLINE_CONFIG":          cfgPath,
		// A ticket-grade spike (×1.5 and more) opens an incident too: the
		// default fleet's injected release raises a P99 of ~120 ms by
		// about ×1.8, which pages nobody at the default "page".
		"WATERLINE_DETECT_MIN_SEVERITY": "ticket",
	}, fmt.Sprintf("pull loop every %s, detector every %s, opening incidents from ticket severity", livePull, liveDetect))
	if err != nil {
		return err
	}

	d.p.step("webhook")
	lr.hooks, err = d.startHookReceiver(lr)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(wire.WebhookCreate{URL: lr.hooks.url, Secret: liveWebhookSecret, Format: "waterline"})
	var hook wire.Webhook
	if err := wl.api.do(ctx, http.MethodPost, "/api/v1/webhooks", "application/json", bytes.NewReader(body), &hook); err != nil {
		return err
	}
	d.p.done("POST /api/v1/webhooks → #%d, format %s, to a receiver on %s that prints each delivery", hook.ID, hook.Format, lr.hooks.url)

	d.p.step("push history")
	pushed, err := d.pushRange(ctx, wl, fl, fl.desc.Start, cut)
	if err != nil {
		return err
	}
	d.p.done("%s samples and %d events before %s; from now on every %s, as they happen", thousands(int64(pushed.samples)), pushed.events, fmtTime(cut), livePush)
	// The pusher stops before serve does (cleanup runs newest first).
	pctx, stopPush := context.WithCancel(ctx)
	pushDone := make(chan struct{})
	go func() { d.pushLive(pctx, wl, fl, cut); close(pushDone) }()
	d.atExit(func() { stopPush(); <-pushDone })

	res, err := d.awaitDetector(ctx, wl, fl, lr)
	if err != nil {
		return err
	}
	d.printSummary(wl, fl, res)
	return nil
}

// tools checks (and installs) what the demo runs; it returns DATABASE_URL.
func (d *demo) tools(ctx context.Context) (string, error) {
	d.p.step("tools")
	dbURL := d.env("DATABASE_URL")
	if pkgs := missingPackages(dbURL == ""); len(pkgs) > 0 {
		d.p.note("installing %s with apt-get (a minute or two, once)", strings.Join(pkgs, " and "))
		if err := installPackages(ctx, pkgs); err != nil {
			return "", err
		}
		d.p.done("installed %s", strings.Join(pkgs, ", "))
	} else if dbURL == "" {
		d.p.done("prometheus, promtool and PostgreSQL found")
	} else {
		d.p.done("prometheus and promtool found")
	}
	return dbURL, nil
}

// postgres starts the private cluster unless dbURL is set; a set one is
// connected to (and migrated) now, so a wrong DATABASE_URL fails here,
// not after the fleet is simulated and backfilled.
func (d *demo) postgres(ctx context.Context, dbURL string) (string, error) {
	d.p.step("postgres")
	if dbURL != "" {
		st, err := store.Open(ctx, dbURL)
		if err != nil {
			return "", err
		}
		st.Close()
		d.p.done("DATABASE_URL %s (the demo's data stays there)", store.RedactURL(dbURL))
		return dbURL, nil
	}
	pg, err := pgtmp.Start(ctx, d.dir+"/pg")
	if err != nil {
		return "", err
	}
	d.atExit(func() {
		if err := pg.Stop(); err != nil {
			d.p.note("stopping Postgres: %v", err)
		}
	})
	d.p.done("private cluster on 127.0.0.1:%d", pg.Port())
	return pg.URL(), nil
}

// exporters serves each simulated exporter's scrape at the time it is
// asked, on one loopback port: /inference/metrics, /dcgm/metrics, …
func (d *demo) exporters(fl *demoFleet) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	var ended sync.Once
	mux := exporterHandler(fl.f, func() {
		ended.Do(func() { d.p.note("the simulated fleet's window has ended: its exporters answer 503 from now on") })
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	d.atExit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return ln.Addr().String(), nil
}

// exporterHandler serves each of f's exporters at /<exporter>/metrics:
// the scrape at the time it is asked. After the window it answers 503
// and calls ended.
func exporterHandler(f *sim.Fleet, ended func()) http.Handler {
	mux := http.NewServeMux()
	for _, e := range sim.Exporters {
		mux.HandleFunc("/"+e+"/metrics", func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			err := f.WriteScrape(&b, e, time.Now())
			if errors.Is(err, sim.ErrOutsideWindow) {
				ended()
				http.Error(w, "the simulated window has ended", http.StatusServiceUnavailable)
				return
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
			_, _ = w.Write(b.Bytes())
		})
	}
	return mux
}

// livePrometheus backfills the scrapes before now and starts Prometheus
// scraping the exporters; it returns its URL and the instant the history
// ends (the live scrapes carry on from there).
func (d *demo) livePrometheus(ctx context.Context, fl *demoFleet, expAddr string) (string, time.Time, error) {
	d.p.step("prometheus")
	srv, err := promrun.New(filepath.Join(d.dir, "prometheus"))
	if err != nil {
		return "", time.Time{}, err
	}
	srv.Progress = func(done, total int) { d.p.update("promtool: %d/%d two-hour blocks", done, total) }
	cut := time.Now().UTC()
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := fl.f.WriteOpenMetricsBefore(pw, cut, nil)
		pw.CloseWithError(err)
		wrote <- err
	}()
	err = srv.Backfill(ctx, pr)
	pr.CloseWithError(errors.New("backfill stopped"))
	if werr := <-wrote; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return "", cut, err
	}
	var targets []promrun.Target
	for _, e := range sim.Exporters {
		targets = append(targets, promrun.Target{Job: e, Addr: expAddr, Path: "/" + e + "/metrics"})
	}
	if err := srv.Scrape(liveScrape, targets); err != nil {
		return "", cut, err
	}
	if err := srv.Start(ctx); err != nil {
		return "", cut, err
	}
	d.atExit(srv.Stop)
	d.p.done("%s backfilled with promtool up to %s; scraping %d exporters every %s; serving on %s",
		fmtSpan(cut.Sub(fl.desc.Start)), fmtTime(cut), len(targets), liveScrape, srv.URL)
	return srv.URL, cut, nil
}

type pushed struct{ samples, events int }

// pushRange pushes the samples and events of [from, to) through the API.
func (d *demo) pushRange(ctx context.Context, s *demoServer, fl *demoFleet, from, to time.Time) (pushed, error) {
	var n pushed
	if evs := fl.f.EventsBetween(from, to); len(evs) > 0 {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, e := range evs {
			in, err := wire.NewEventIn(e)
			if err != nil {
				return n, err
			}
			if err := enc.Encode(in); err != nil {
				return n, err
			}
		}
		r, err := s.api.postNDJSON(ctx, "/api/v1/events", b.Bytes())
		if err != nil {
			return n, err
		}
		n.events = r.Accepted + r.Duplicates
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for sm := range fl.f.SamplesBetween(from, to) {
		if err := enc.Encode(wire.NewSample(sm)); err != nil {
			return n, err
		}
		n.samples++
	}
	if n.samples > 0 {
		if _, err := s.api.postSamples(ctx, b.Bytes(), 5000, func(int) {}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// pushLive pushes what happened since from every livePush, as a gateway
// and a CD system would, until ctx ends.
func (d *demo) pushLive(ctx context.Context, s *demoServer, fl *demoFleet, from time.Time) {
	tick := time.NewTicker(livePush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		to := time.Now().UTC()
		if _, err := d.pushRange(ctx, s, fl, from, to); err != nil {
			if ctx.Err() == nil {
				d.p.note("push: %v (retrying)", err)
			}
			continue
		}
		for _, e := range fl.f.EventsBetween(from, to) {
			d.p.note("pushed event: %s %s", e.Kind, oneLine(e.Summary, 80))
		}
		from = to
	}
}

// hookReceiver is the small local receiver the demo's webhook posts to:
// it prints each delivery and keeps when the first one came.
type hookReceiver struct {
	url string

	mu    sync.Mutex
	first map[int64]time.Time // incident → first delivery
	keys  map[string]int      // idempotency key → deliveries
}

func (d *demo) startHookReceiver(lr *liveRun) (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hookReceiver{url: "http://" + ln.Addr().String() + "/hook", first: map[int64]time.Time{}, keys: map[string]int{}}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().UTC()
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if webhook.Verify(liveWebhookSecret, r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), raw, at) != nil {
			d.p.note("webhook: a delivery with a bad signature (rejected)")
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev wire.WebhookEvent
		_ = json.Unmarshal(raw, &ev)
		key := r.Header.Get(webhook.HeaderIdempotencyKey)
		h.mu.Lock()
		h.keys[key]++
		again := h.keys[key] > 1
		if _, ok := h.first[ev.ID]; !ok {
			h.first[ev.ID] = at
		}
		h.mu.Unlock()
		note := ""
		if again {
			note = " (again: same idempotency key)"
		}
		if ev.TopCause != nil {
			note = fmt.Sprintf(", top cause %s (%.2f)", ev.TopCause.Category, ev.TopCause.Score) + note
		}
		d.p.note("webhook delivered at %s: format waterline, %s, incident #%d, key %s%s", fmtTime(at), r.Header.Get(webhook.HeaderEvent), ev.ID, key, note)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	d.atExit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return h, nil
}

func (h *hookReceiver) firstFor(id int64) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.first[id]
	return t, ok
}

// awaitDetector waits for the detector to record a spike and open an
// incident after the injected onset, then for its analysis, and prints
// the live line and the delays.
func (d *demo) awaitDetector(ctx context.Context, s *demoServer, fl *demoFleet, lr *liveRun) (demoResult, error) {
	d.p.step("detector")
	var res demoResult
	if wait := time.Until(lr.onset); wait > 0 {
		d.p.note("waiting: the %s incident is injected at %s, in %s; only the detector opens an incident", fl.truth.Category, fmtTime(lr.onset), wait.Round(time.Second))
	} else {
		d.p.note("the set-up outlasted --inject-after: the onset (%s) is already in the backfilled history", fmtTime(lr.onset))
	}
	deadline := lr.onset.Add(d.opts.timeout)
	var spikeAt, openedAt, readyAt time.Time
	var firstReady wire.Analysis
	var inc store.Incident
	seenBefore := map[int64]bool{}
	recordedAt := map[int64]time.Time{} // spike → when the demo first saw it recorded
	for {
		if time.Now().After(deadline) && openedAt.IsZero() {
			return res, fmt.Errorf("the detector opened no incident within %s of the onset (%s; see waterline.log)", d.opts.timeout, d.pipelineState(ctx, s, len(recordedAt)))
		}
		if time.Now().After(deadline.Add(d.opts.timeout)) {
			return res, fmt.Errorf("analysis of incident %d not ready %s after the onset (see waterline.log)", inc.ID, 2*d.opts.timeout)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		now := time.Now().UTC()
		if openedAt.IsZero() {
			sps, err := s.st.RecordedSpikes(ctx, lr.onset.Add(-5*time.Minute), now.Add(time.Minute), 100)
			if err != nil {
				return res, err
			}
			for _, sp := range sps {
				if sp.Direction != correlate.Up || !recordedAt[sp.ID].IsZero() {
					continue
				}
				recordedAt[sp.ID] = now
				if spikeAt.IsZero() {
					spikeAt = now
				}
				d.p.note("detector recorded a spike at %s: %s on %s, onset %s (%s after the injected onset), ×%.1f so far",
					fmtTime(now), roleName(string(sp.Role)), orFleet(sp.Scope.Model), fmtTime(sp.Onset), now.Sub(lr.onset).Round(time.Second), sp.PeakValue/sp.Baseline)
			}
		}
		if openedAt.IsZero() {
			page, _, err := s.st.ListIncidents(ctx, store.IncidentFilter{Limit: 50})
			if err != nil {
				return res, err
			}
			for _, in := range page {
				if in.Source != store.SourceDetector || seenBefore[in.ID] {
					continue
				}
				if in.CreatedAt.Before(lr.onset) {
					seenBefore[in.ID] = true
					d.p.note("the detector opened incident #%d before the injection (a false alarm): %s", in.ID, in.Title)
					continue
				}
				inc, openedAt = in, in.CreatedAt.UTC()
			}
			if openedAt.IsZero() {
				continue
			}
			d.p.note("detector opened incident #%d at %s: %s", inc.ID, fmtTime(openedAt), inc.Title)
		}
		var a wire.Analysis
		if err := s.api.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/incidents/%d/analysis", inc.ID), "", nil, &a); err != nil {
			return res, err
		}
		if a.Status == "failed" {
			return res, fmt.Errorf("analysis of incident %d failed: %s", inc.ID, a.Error)
		}
		if a.Status != "ready" || a.Result == nil {
			continue
		}
		if readyAt.IsZero() {
			readyAt, firstReady = time.Now().UTC(), a
		}
		// The first analysis of a live incident may have half a minute of
		// data after the onset. The line reports the cause once a version
		// has a minute more (the webhook's cause.changed follows the same
		// way), or the first one if no later version comes.
		if a.Version <= firstReady.Version && time.Since(readyAt) < settleFor {
			continue
		}
		if a.ComputedAt != nil && a.ComputedAt.Sub(openedAt) < settleAfter && time.Since(readyAt) < settleFor {
			continue
		}
		res.analysis = a
		if top, was := topOfWire(a), topOfWire(firstReady); top != was {
			d.p.note("the first analysis (v%d) put %s first; with a minute more of data (v%d), %s", firstReady.Version, was, a.Version, top)
		}
		break
	}
	d.p.done("incident #%d opened by the detector; analysis ready", inc.ID)
	res.incidentID = inc.ID
	res.url = s.public + fmt.Sprintf("/incidents/%d", inc.ID)
	res.from = inc.Start
	res.to = time.Now().UTC()
	if inc.Scope.Model != "" {
		res.spike = &wire.ListedSpike{}
		res.spike.Scope.Model = inc.Scope.Model
	}
	share, err := s.st.CreateShareLink(ctx, inc.ID)
	if err != nil {
		return res, err
	}
	res.shareURL = s.public + "/s/" + share
	// The webhook of the opening is usually in by now; wait a little.
	hookAt, hooked := time.Time{}, false
	for i := 0; i < 40 && !hooked; i++ {
		if hookAt, hooked = lr.hooks.firstFor(inc.ID); !hooked {
			time.Sleep(250 * time.Millisecond)
		}
	}
	top := "none"
	if len(res.analysis.Causes) > 0 {
		top = fmt.Sprintf("%s (%.2f)", res.analysis.Causes[0].Category, res.analysis.Causes[0].Score)
	}
	since := func(t time.Time, ok bool) string {
		if !ok || t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.0fs", t.Sub(lr.onset).Seconds())
	}
	d.p.note("live delays after the injected onset: spike recorded %s, incident opened %s, analysis ready %s, webhook delivered %s",
		since(spikeAt, true), since(openedAt, true), since(readyAt, true), since(hookAt, hooked))
	// Where the time goes, for the spike that opened the incident (the
	// first recorded of those it holds): the curve departs (the cause's
	// ramp, the rate window), the alarm confirms the departure in the data,
	// the data reaches the detector (scrape, pull delay and interval,
	// detector interval), and the spike adds enough latency to page.
	var opener *store.RecordedSpike
	sps, err := s.st.RecordedSpikes(ctx, lr.onset.Add(-5*time.Minute), time.Now().Add(time.Minute), 100)
	if err != nil {
		return res, err
	}
	first := func(a, b store.RecordedSpike) bool {
		ta, tb := recordedAt[a.ID], recordedAt[b.ID]
		if ta.IsZero() || tb.IsZero() || ta.Equal(tb) {
			return a.DetectedAt.Before(b.DetectedAt)
		}
		return ta.Before(tb)
	}
	for i, sp := range sps {
		if sp.IncidentID != nil && *sp.IncidentID == inc.ID && (opener == nil || first(sp, *opener)) {
			opener = &sps[i]
		}
	}
	if opener != nil {
		at, ok := recordedAt[opener.ID]
		d.p.note("live breakdown after the injected onset: curve departs %s, spike confirmed in the data %s, recorded by the detector %s, incident opened %s (%s on %s, ×%.1f)",
			since(opener.Onset, true), since(opener.DetectedAt, true), since(at, ok), since(openedAt, true),
			roleName(string(opener.Role)), orFleet(opener.Scope.Model), opener.PeakValue/opener.Baseline)
	}
	fmt.Fprintf(d.stdout, "\nlive: incident #%d opened by the detector at %s, %d s after the injected onset; top cause %s\n",
		inc.ID, fmtTime(openedAt), int(openedAt.Sub(lr.onset).Round(time.Second)/time.Second), top)
	return res, nil
}

// pipelineState says how far each pull source had got and how many spikes
// the detector recorded, so a live run that opened nothing tells whether
// the data was late, or on time and judged quiet.
func (d *demo) pipelineState(ctx context.Context, s *demoServer, spikes int) string {
	srcs, err := s.st.PullSources(ctx)
	if err != nil {
		return "pull state unknown: " + err.Error()
	}
	now := time.Now()
	parts := make([]string, 0, len(srcs)+1)
	for _, p := range srcs {
		state := fmt.Sprintf("%s pulled up to %s ago", p.Source, now.Sub(p.Cursor).Round(time.Second))
		if p.LastError != "" {
			state += fmt.Sprintf(" (last error: %s)", p.LastError)
		}
		parts = append(parts, state)
	}
	parts = append(parts, fmt.Sprintf("%d rising spikes recorded since 5 min before the onset", spikes))
	return strings.Join(parts, ", ")
}

// settleAfter is how long after the opening a live incident's analysis
// must be computed for the live line to report its cause; settleFor is
// how long the demo waits for one past the first ready analysis.
const (
	settleAfter = time.Minute
	settleFor   = 2 * time.Minute
)

// topOfWire is an analysis' top cause category ("" when none).
func topOfWire(a wire.Analysis) string {
	if a.Result == nil || len(a.Causes) == 0 {
		return ""
	}
	return string(a.Causes[0].Category)
}
