// Package promtest runs a real Prometheus for tests: OpenMetrics text the
// test generates is backfilled with "promtool tsdb create-blocks-from
// openmetrics", then Debian's prometheus binary serves it on a free
// loopback port. Stop and Start simulate an outage. Tests only.
package promtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Prometheus is one Prometheus server over a TSDB directory of its own.
type Prometheus struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234. It stays the same
	// across Stop and Start.
	URL  string
	dir  string
	data string
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// New prepares a Prometheus (not started) in a temporary directory and
// stops it at cleanup. It fails the test when the binaries are missing:
// CI installs Debian's "prometheus" package, so a skip would hide a gap.
func New(t testing.TB) *Prometheus {
	t.Helper()
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("promtest: %s not found: install Debian's package (apt-get install -y prometheus)", bin)
		}
	}
	dir := t.TempDir()
	p := &Prometheus{dir: dir, data: filepath.Join(dir, "tsdb"), addr: freeAddr(t)}
	p.URL = "http://" + p.addr
	cfg := "global:\n  scrape_interval: 15s\nscrape_configs: []\n"
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(t) })
	return p
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

// Backfill writes om into the TSDB. promtool re-reads its whole input for
// every 2-hour block it cuts, so the input is first split into one file
// per 2-hour-aligned window and promtool runs once per window (two at a
// time), which keeps a 24-hour fleet linear instead of quadratic.
// Samples of one series must be in time order and timestamps in seconds.
func (p *Prometheus) Backfill(t testing.TB, om io.Reader) {
	t.Helper()
	files, err := splitByWindow(om, filepath.Join(p.dir, "om"), 2*time.Hour)
	if err != nil {
		t.Fatalf("promtest: split openmetrics: %v", err)
	}
	sem := make(chan struct{}, 2)
	errs := make(chan error, len(files))
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", f, p.data).CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("promtool %s: %v\n%s", filepath.Base(f), err, out)
			}
			_ = os.Remove(f)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("promtest: %v", err)
	}
}

// BackfillWindows backfills [from, to) one 2-hour-aligned window at a
// time: write produces the OpenMetrics text of the samples in [lo, hi)
// (without "# EOF"), so a large generated fixture is written once and
// never split or re-read. Two windows are written and converted at once.
func (p *Prometheus) BackfillWindows(t testing.TB, from, to time.Time, write func(w io.Writer, lo, hi time.Time) error) {
	t.Helper()
	dir := filepath.Join(p.dir, "om")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const win = 2 * time.Hour
	sem := make(chan struct{}, 2)
	errs := make(chan error, 1+int(to.Sub(from)/win))
	var wg sync.WaitGroup
	for lo := from.Truncate(win); lo.Before(to); lo = lo.Add(win) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name := filepath.Join(dir, fmt.Sprintf("w%d.om", lo.Unix()))
			err := func() error {
				f, err := os.Create(name)
				if err != nil {
					return err
				}
				bw := bufio.NewWriterSize(f, 1<<20)
				if err := write(bw, lo, lo.Add(win)); err != nil {
					f.Close()
					return err
				}
				bw.WriteString("# EOF\n")
				if err := bw.Flush(); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}()
			if err == nil {
				var out []byte
				out, err = exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", name, p.data).CombinedOutput()
				if err != nil {
					err = fmt.Errorf("promtool %s: %v\n%s", filepath.Base(name), err, out)
				}
			}
			_ = os.Remove(name)
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("promtest: %v", err)
	}
}

// splitByWindow copies OpenMetrics text into one file per window of the
// sample timestamps, repeating each family's metadata lines in every file
// that has samples of that family.
func splitByWindow(r io.Reader, dir string, window time.Duration) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	type out struct {
		f      *os.File
		w      *bufio.Writer
		family int // index of the last family written, for its header
	}
	outs := map[int64]*out{}
	var (
		header  []string // metadata lines of the current family
		family  int
		sc      = bufio.NewScanner(r)
		winSecs = int64(window / time.Second)
	)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line == "# EOF" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if len(header) > 0 && !sameFamily(header[len(header)-1], line) {
				header = nil
			}
			if len(header) == 0 {
				family++
			}
			header = append(header, line)
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("sample without timestamp: %q", line)
		}
		ts, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("bad timestamp in %q: %v", line, err)
		}
		w := int64(ts) / winSecs
		o := outs[w]
		if o == nil {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("w%012d.om", w)))
			if err != nil {
				return nil, err
			}
			o = &out{f: f, w: bufio.NewWriterSize(f, 1<<20)}
			outs[w] = o
		}
		if o.family != family {
			for _, h := range header {
				o.w.WriteString(h)
				o.w.WriteByte('\n')
			}
			o.family = family
		}
		o.w.WriteString(line)
		o.w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var names []string
	for _, o := range outs {
		o.w.WriteString("# EOF\n")
		if err := o.w.Flush(); err != nil {
			return nil, err
		}
		if err := o.f.Close(); err != nil {
			return nil, err
		}
		names = append(names, o.f.Name())
	}
	sort.Strings(names)
	return names, nil
}

// sameFamily reports whether two metadata lines ("# TYPE name …") name the
// same metric family.
func sameFamily(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	return len(fa) > 2 && len(fb) > 2 && fa[2] == fb[2]
}

// Start runs Prometheus on the TSDB and waits until it is ready.
func (p *Prometheus) Start(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		t.Fatal("promtest: already running")
	}
	logf, err := os.OpenFile(filepath.Join(p.dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("prometheus",
		"--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+p.data,
		// Retention counts from the newest block: old fixtures must not be
		// deleted at start.
		"--storage.tsdb.retention.time=100y",
		"--web.listen-address="+p.addr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("promtest: start prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done, p.log = cmd, done, logf

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("promtest: prometheus exited early; log:\n%s", p.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("promtest: prometheus not ready at %s after 60s; log:\n%s", p.URL, p.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops Prometheus (no-op when stopped); its data stays for Start.
func (p *Prometheus) Stop(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.log.Close()
	p.cmd, p.done, p.log = nil, nil, nil
}

func (p *Prometheus) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "prometheus.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
