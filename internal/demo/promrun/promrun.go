// Package promrun runs a real Prometheus over backfilled data: OpenMetrics
// text is turned into TSDB blocks with "promtool tsdb create-blocks-from
// openmetrics", then Debian's prometheus binary serves them on a free
// loopback port. `waterline demo` uses it directly; tests use it through
// internal/testing/promtest.
package promrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/waterline-dev/waterline/internal/freeport"
)

// Binaries are the programs a Server needs, both from Debian's
// "prometheus" package.
var Binaries = []string{"prometheus", "promtool"}

// ErrMissing is returned (wrapped) by New when a binary is not on $PATH.
var ErrMissing = errors.New("not installed")

// Server is one Prometheus over a TSDB directory of its own. Its methods
// are safe for concurrent use.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234. It stays the same
	// across Stop and Start, once started: a first Start that finds its
	// port taken moves to another (see Start).
	URL string
	// Progress, if set, is told how many backfill windows of how many are
	// done, after each one.
	Progress func(done, total int)
	// Flags are more command-line flags for prometheus (a test's limits).
	Flags []string

	dir  string
	data string
	addr string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	started bool // once: the URL is in use and must not move
	log     *os.File
}

// New prepares a Prometheus (not started) in dir, which it creates; the
// TSDB, the config and the log live there. The caller removes dir. It
// fails with ErrMissing when prometheus or promtool is not installed.
func New(dir string) (*Server, error) {
	if err := LookPath(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("promrun: %w", err)
	}
	addr, err := freeport.Addr()
	if err != nil {
		return nil, fmt.Errorf("promrun: %w", err)
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "tsdb"), addr: addr, URL: "http://" + addr}
	// Nothing is scraped: the data is all backfilled.
	cfg := "global:\n  scrape_interval: 15s\nscrape_configs: []\n"
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("promrun: %w", err)
	}
	return s, nil
}

// Target is one scrape job: an exporter on the loopback.
type Target struct {
	Job  string // job name, e.g. "inference"
	Addr string // host:port
	Path string // metrics path, e.g. /metrics
}

// Scrape makes the Prometheus (before Start) scrape targets every
// interval, as well as serve what was backfilled. The job and instance
// labels a scrape adds are dropped again, so the scraped series carry on
// the backfilled ones (which have neither) instead of starting new ones.
func (s *Server) Scrape(interval time.Duration, targets []Target) error {
	if interval < time.Second || interval%time.Second != 0 {
		return fmt.Errorf("promrun: scrape interval %s: want whole seconds", interval)
	}
	var b strings.Builder
	secs := int64(interval / time.Second)
	fmt.Fprintf(&b, "global:\n  scrape_interval: %ds\n  scrape_timeout: %ds\nscrape_configs:\n", secs, secs)
	for _, t := range targets {
		fmt.Fprintf(&b, "  - job_name: %q\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n", t.Job, t.Path, t.Addr)
		b.WriteString("    metric_relabel_configs:\n      - action: labeldrop\n        regex: job|instance\n")
	}
	if err := os.WriteFile(filepath.Join(s.dir, "prometheus.yml"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("promrun: %w", err)
	}
	return nil
}

// LookPath checks that prometheus and promtool are installed.
func LookPath() error {
	for _, bin := range Binaries {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("promrun: %s %w (Debian package \"prometheus\")", bin, ErrMissing)
		}
	}
	return nil
}

// windowSize is promtool's fixed block length: it cuts 2-hour blocks and
// re-reads its whole input for each, so inputs are split to match.
const windowSize = 2 * time.Hour

// Backfill writes om (OpenMetrics text, ending with "# EOF") into the
// TSDB. The input is first split into one file per 2-hour-aligned window
// and promtool runs once per window (two at a time), which keeps a
// 24-hour fleet linear instead of quadratic. Samples of one series must
// be in time order and timestamps in seconds.
func (s *Server) Backfill(ctx context.Context, om io.Reader) error {
	files, err := splitByWindow(om, filepath.Join(s.dir, "om"), windowSize)
	if err != nil {
		return fmt.Errorf("promrun: split openmetrics: %w", err)
	}
	jobs := make([]func() (string, error), len(files))
	for i, f := range files {
		jobs[i] = func() (string, error) { return f, nil }
	}
	return s.convert(ctx, jobs)
}

// BackfillWindows backfills [from, to) one 2-hour-aligned window at a
// time: write produces the OpenMetrics text of the samples in [lo, hi)
// (without "# EOF"), so a large generated fixture is written once and
// never split or re-read. Two windows are written and converted at once.
func (s *Server) BackfillWindows(ctx context.Context, from, to time.Time, write func(w io.Writer, lo, hi time.Time) error) error {
	dir := filepath.Join(s.dir, "om")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("promrun: %w", err)
	}
	var jobs []func() (string, error)
	for lo := from.Truncate(windowSize); lo.Before(to); lo = lo.Add(windowSize) {
		jobs = append(jobs, func() (string, error) {
			name := filepath.Join(dir, fmt.Sprintf("w%d.om", lo.Unix()))
			f, err := os.Create(name)
			if err != nil {
				return "", err
			}
			bw := bufio.NewWriterSize(f, 1<<20)
			err = write(bw, lo, lo.Add(windowSize))
			if err == nil {
				_, err = bw.WriteString("# EOF\n")
			}
			if err == nil {
				err = bw.Flush()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return name, err
		})
	}
	return s.convert(ctx, jobs)
}

// convert runs each job (which yields an OpenMetrics file) and promtool
// on its file, two at a time, removing the files as it goes.
func (s *Server) convert(ctx context.Context, jobs []func() (string, error)) error {
	sem := make(chan struct{}, 2)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		done     int
	)
	for _, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name, err := job()
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			if err == nil {
				var out []byte
				out, err = exec.CommandContext(ctx, "promtool", "tsdb", "create-blocks-from", "openmetrics", name, s.data).CombinedOutput()
				if err != nil {
					err = fmt.Errorf("promtool %s: %v\n%s", filepath.Base(name), err, bytes.TrimSpace(out))
				}
			}
			if name != "" {
				_ = os.Remove(name)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			done++
			if s.Progress != nil {
				s.Progress(done, len(jobs))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("promrun: %w", firstErr)
	}
	return nil
}

// Start runs Prometheus on the TSDB and waits until it is ready (at most
// a minute, or until ctx ends). The free port New picked may have been
// taken since by another process: another test's Prometheus, whose
// /-/ready then answered for ours, and every query read its data (a
// replay pulled 28 sources, found them all empty, and passed the pull);
// or any socket, and Prometheus exited with "address already in use".
// So readiness counts only from the server whose TSDB is this one; on
// the first start a taken port is exchanged for another, up to 5 times;
// a restart keeps its URL and tries the port again for a few seconds.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for try := 1; ; try++ {
		err := s.startLocked(ctx)
		if err == nil {
			s.started = true
			return nil
		}
		if !errors.Is(err, errPortTaken) || try == 5 {
			return err
		}
		if s.started {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(try) * time.Second):
			}
			continue
		}
		addr, aerr := freeport.Addr()
		if aerr != nil {
			return aerr
		}
		s.addr, s.URL = addr, "http://"+addr
	}
}

// errPortTaken: another process holds the Server's address.
var errPortTaken = errors.New("promrun: the port is taken")

func (s *Server) startLocked(ctx context.Context) error {
	if s.cmd != nil {
		return errors.New("promrun: already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("promrun: %w", err)
	}
	var logStart int64 // where this start's lines begin
	if fi, err := logf.Stat(); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command("prometheus", append([]string{
		"--config.file=" + filepath.Join(s.dir, "prometheus.yml"),
		"--storage.tsdb.path=" + s.data,
		// Retention counts from the newest block: old data must not be
		// deleted at start.
		"--storage.tsdb.retention.time=100y",
		"--web.listen-address=" + s.addr,
		"--log.level=warn"}, s.Flags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C in the terminal reaches only our
	// process, which then stops Prometheus in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("promrun: start prometheus: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.log = cmd, done, logf

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			s.stopLocked()
			if s.bindFailedSince(logStart) {
				return fmt.Errorf("%w: %s (prometheus could not bind it)", errPortTaken, s.addr)
			}
			return fmt.Errorf("promrun: prometheus exited early; log:\n%s", s.LogTail())
		default:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, s.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				switch ours, err := s.servesOurTSDB(ctx); {
				case err == nil && ours:
					return nil
				case err == nil:
					s.stopLocked()
					return fmt.Errorf("%w %s", errPortTaken, s.addr)
				}
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			s.stopLocked()
			if ctx.Err() != nil {
				return fmt.Errorf("promrun: waiting for prometheus: %w", ctx.Err())
			}
			return fmt.Errorf("promrun: prometheus not ready at %s after 60s; log:\n%s", s.URL, s.LogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bindFailedSince reports whether the log, from offset on, says the
// listen address was in use.
func (s *Server) bindFailedSince(offset int64) bool {
	b, err := os.ReadFile(filepath.Join(s.dir, "prometheus.log"))
	if err != nil || int64(len(b)) < offset {
		return false
	}
	return bytes.Contains(b[offset:], []byte("address already in use"))
}

// servesOurTSDB asks the server on s.addr which TSDB it serves.
func (s *Server) servesOurTSDB(ctx context.Context) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, s.URL+"/api/v1/status/flags", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var flags struct {
		Data map[string]string `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&flags); err != nil {
		return false, err
	}
	return flags.Data["storage.tsdb.path"] == s.data, nil
}

// Stop stops Prometheus (no-op when stopped): SIGINT, then SIGKILL after
// 20 s. Its data stays for Start.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.log.Close()
	s.cmd, s.done, s.log = nil, nil, nil
}

// Running reports whether the process is up (started and not exited).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// LogTail returns the end of prometheus.log, for error messages.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "prometheus.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}
