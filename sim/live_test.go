package sim

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A live run backfills the history before an instant and then serves one
// scrape at a time: together they must say exactly what the whole window
// says, scrape for scrape.
func TestLiveScrapesMatchTheWindow(t *testing.T) {
	o := Small(3, Release)
	o.Step = 5 * time.Second
	o.Duration = 25 * time.Minute
	o.Onset = 20 * time.Minute
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	start := f.Options().Start
	var all bytes.Buffer
	if err := f.WriteOpenMetrics(&all, nil); err != nil {
		t.Fatal(err)
	}
	// Every sample line of the full text, keyed by series and timestamp.
	want := map[string]string{}
	sc := bufio.NewScanner(&all)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ts := splitLine(line)
		want[series+" "+ts] = value
	}

	cut := start.Add(21*time.Minute + 2*time.Second)
	var hist bytes.Buffer
	if err := f.WriteOpenMetricsBefore(&hist, cut, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(hist.String(), "# EOF\n") {
		t.Fatal("history does not end with # EOF")
	}
	// The history is exactly the window's lines before the cut.
	wantN := 0
	for k := range want {
		if ts, _ := strconv.ParseInt(k[strings.LastIndexByte(k, ' ')+1:], 10, 64); ts < cut.Unix() {
			wantN++
		}
	}
	n := 0
	for _, line := range strings.Split(hist.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ts := splitLine(line)
		if got, ok := want[series+" "+ts]; !ok || got != value {
			t.Fatalf("history line %q: the window says %q", line, got)
		}
		n++
	}
	if n == 0 || n != wantN {
		t.Fatalf("history: %d lines, want the window's %d before the cut", n, wantN)
	}

	// A scrape at cut + 4 s shows the scrape of 21:05, no
	// timestamps, every exporter once.
	stamp := start.Add(21*time.Minute + 5*time.Second).Unix()
	lines := 0
	for _, e := range Exporters {
		var b bytes.Buffer
		if err := f.WriteScrape(&b, e, cut.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), "# EOF\n") {
			t.Fatalf("%s: no # EOF", e)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			series, value := line[:i], line[i+1:]
			if !strings.HasSuffix(series, "}") && strings.ContainsRune(series, ' ') {
				t.Fatalf("%s: %q: want name and value only", e, line)
			}
			if got, ok := want[series+" "+strconv.FormatInt(stamp, 10)]; !ok || got != value {
				t.Fatalf("%s: %q: the window says %q at %d", e, line, got, stamp)
			}
			lines++
		}
	}
	if lines == 0 {
		t.Fatal("empty scrapes")
	}
	if err := f.WriteScrape(&bytes.Buffer{}, "inference", start.Add(time.Hour)); err != ErrOutsideWindow {
		t.Fatalf("after the window: %v", err)
	}

	// Samples and events split at any instant add up to the whole.
	total := 0
	for range f.Samples() {
		total++
	}
	a, b := 0, 0
	for range f.SamplesBetween(start, cut) {
		a++
	}
	for s := range f.SamplesBetween(cut, start.Add(time.Hour)) {
		if s.Time.Before(cut) {
			t.Fatalf("sample at %s before the cut", s.Time)
		}
		b++
	}
	if a+b != total || a == 0 || b == 0 {
		t.Fatalf("samples: %d + %d, want %d in all", a, b, total)
	}
	if got := len(f.EventsBetween(start, cut)) + len(f.EventsBetween(cut, start.Add(time.Hour))); got != len(f.Events()) {
		t.Fatalf("events: %d, want %d", got, len(f.Events()))
	}
}

// splitLine splits an OpenMetrics sample line with a timestamp into the
// series (name and labels, which may hold spaces), the value and the time.
func splitLine(line string) (series, value, ts string) {
	i := strings.LastIndexByte(line, ' ')
	j := strings.LastIndexByte(line[:i], ' ')
	return line[:j], line[j+1 : i], line[i+1:]
}

// BenchmarkScrape is one exporter's scrape near the end of a default
// fleet's live window at 5 s: what each Prometheus scrape costs the demo.
func BenchmarkScrape(b *testing.B) {
	f, err := New(Options{Seed: 1, Scenario: Release, Step: 5 * time.Second, Duration: 3 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	at := f.Options().Start.Add(3*time.Hour - time.Minute)
	f.run()
	b.ResetTimer()
	for range b.N {
		for _, e := range Exporters {
			if err := f.WriteScrape(io.Discard, e, at); err != nil {
				b.Fatal(err)
			}
		}
	}
}
