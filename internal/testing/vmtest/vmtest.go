// Package vmtest runs a real VictoriaMetrics (Debian's "victoria-metrics",
// single node) for tests: OpenMetrics text the test generates is imported
// through /api/v1/import/prometheus, then Waterline reads it back through
// the Prometheus query API VictoriaMetrics serves. Tests only.
package vmtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/freeport"
)

// Binary is the single-node server of Debian's "victoria-metrics" package.
const Binary = "victoria-metrics"

// VictoriaMetrics is one server over a data directory of its own.
type VictoriaMetrics struct {
	URL string // e.g. http://127.0.0.1:41234
	dir string
}

// Start runs VictoriaMetrics on a free loopback port until the test ends.
// It fails the test when the binary is missing: scripts/test-deps.sh
// installs it, so a skip would hide a gap.
func Start(t testing.TB) *VictoriaMetrics {
	t.Helper()
	return StartWith(t)
}

// StartWith is Start with more command-line flags for the server (limits
// such as -search.maxSamplesPerQuery).
func StartWith(t testing.TB, flags ...string) *VictoriaMetrics {
	t.Helper()
	if _, err := exec.LookPath(Binary); err != nil {
		t.Fatalf("vmtest: %s not installed: apt-get install -y victoria-metrics (scripts/test-deps.sh)", Binary)
	}
	dir := t.TempDir()
	// A port picked free can be taken before the server binds it (see
	// internal/freeport): then it is tried on another, up to 3 times.
	for try := 1; ; try++ {
		addr, err := freeport.Addr()
		if err != nil {
			t.Fatal(err)
		}
		vm, err := start(t, dir, addr, flags)
		if err == nil {
			return vm
		}
		if !errors.Is(err, errPortTaken) || try == 3 {
			t.Fatal(err)
		}
	}
}

var errPortTaken = errors.New("vmtest: the port is taken")

func start(t testing.TB, dir, addr string, flags []string) (*VictoriaMetrics, error) {
	logf, err := os.Create(filepath.Join(dir, "vm.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(Binary, append([]string{
		"-storageDataPath=" + filepath.Join(dir, "data"),
		"-httpListenAddr=" + addr,
		// Test data lies in the past, at any date: keep it all.
		"-retentionPeriod=100y",
		// Answers must follow imports at once, not a cache.
		"-search.disableCache",
		"-search.latencyOffset=0s",
		"-loggerLevel=WARN"}, flags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("vmtest: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	vm := &VictoriaMetrics{URL: "http://" + addr, dir: dir}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			if bytes.Contains(b, []byte("address already in use")) {
				return nil, fmt.Errorf("%w: %s", errPortTaken, addr)
			}
			return nil, fmt.Errorf("vmtest: victoria-metrics exited early:\n%s", b)
		default:
		}
		if res, err := http.Get(vm.URL + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				// Another process may have taken the port since it was
				// free (as promrun.Server.Start explains): only ours
				// names our data path among its flags.
				if !servesDir(vm.URL, filepath.Join(dir, "data")) {
					stop()
					return nil, fmt.Errorf("%w: another server answers on %s", errPortTaken, vm.URL)
				}
				return vm, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("vmtest: victoria-metrics not healthy at %s after a minute", vm.URL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Run starts VictoriaMetrics and imports om.
func Run(t testing.TB, om io.Reader) *VictoriaMetrics {
	t.Helper()
	vm := Start(t)
	vm.Import(t, om)
	return vm
}

// Import loads om (OpenMetrics text with timestamps in seconds, as
// promtool backfills) through /api/v1/import/prometheus, whose Prometheus
// text format counts milliseconds, in requests of about 8 MB, then flushes
// so that queries see it all.
func (vm *VictoriaMetrics) Import(t testing.TB, om io.Reader) {
	t.Helper()
	if err := vm.importOM(om); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(vm.URL + "/internal/force_flush")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}

func (vm *VictoriaMetrics) importOM(om io.Reader) error {
	sc := bufio.NewScanner(om)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var buf bytes.Buffer
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		res, err := http.Post(vm.URL+"/api/v1/import/prometheus", "text/plain", bytes.NewReader(buf.Bytes()))
		if err != nil {
			return fmt.Errorf("vmtest: import: %w", err)
		}
		defer res.Body.Close()
		if res.StatusCode/100 != 2 {
			b, _ := io.ReadAll(res.Body)
			return fmt.Errorf("vmtest: import: %d %s", res.StatusCode, b)
		}
		buf.Reset()
		return nil
	}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		j := strings.LastIndexByte(line[:max(i, 0)], ' ')
		if i < 0 || j < 0 || strings.HasSuffix(line[:i], "}") {
			return fmt.Errorf("vmtest: line %d: want a timestamp: %q", n, line)
		}
		secs, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return fmt.Errorf("vmtest: line %d: timestamp: %v", n, err)
		}
		buf.WriteString(line[:i+1])
		buf.WriteString(strconv.FormatInt(int64(math.Round(secs*1000)), 10))
		buf.WriteByte('\n')
		if buf.Len() > 8<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("vmtest: empty input")
	}
	return nil
}

// servesDir says whether the VictoriaMetrics at url stores its data in dir
// (its /flags page lists -storageDataPath).
func servesDir(url, dir string) bool {
	res, err := http.Get(url + "/flags")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return strings.Contains(string(b), dir)
}
