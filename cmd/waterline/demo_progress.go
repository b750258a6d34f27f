package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress prints the demo's numbered steps with their timings. On a
// terminal a long step shows a live line that is overwritten in place;
// elsewhere (CI logs, tests) only each step's final line is written, so
// logs stay readable.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	n      int // current step
	total  int
	name   string
	start  time.Time
	last   time.Time // last live update
	t0     time.Time // the whole run
	status string    // live line shown, for clearing
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, tty: isTerminal(w), total: total, t0: time.Now()}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// step starts step name.
func (p *progress) step(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.name, p.start, p.last = name, time.Now(), time.Time{}
	if p.tty {
		p.show(p.prefix() + "…")
	}
}

// update shows a live detail of the running step (at most 5 times a
// second, and only on a terminal).
func (p *progress) update(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.show(fmt.Sprintf("%s… %s", p.prefix(), fmt.Sprintf(format, args...)))
}

// done ends the running step with a one-line result and its duration.
func (p *progress) done(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%s %s (%s)", p.prefix(), fmt.Sprintf(format, args...), seconds(time.Since(p.start)))
	if p.tty {
		p.show(line)
		fmt.Fprintln(p.w)
		p.status = ""
		return
	}
	fmt.Fprintln(p.w, line)
}

// note prints a line outside the numbered steps.
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.status != "" {
		p.show("")
		fmt.Fprint(p.w, "\r")
		p.status = ""
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

// elapsed is the time since the run began.
func (p *progress) elapsed() time.Duration { return time.Since(p.t0) }

func (p *progress) prefix() string {
	return fmt.Sprintf("[%d/%d] %-18s", p.n, p.total, p.name)
}

// show overwrites the live line (terminal only).
func (p *progress) show(s string) {
	pad := ""
	if n := len(p.status) - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(p.w, "\r"+s+pad)
	p.status = s
}

// seconds formats a duration as "1.2s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
