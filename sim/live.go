package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// A live fleet: `waterline demo --live` plans a window that starts hours
// before now and ends well after it, backfills the scrapes before now and
// serves the rest as its exporters would, in real time. These are the
// pieces it needs: the history before an instant, one exporter's scrape at
// an instant, and the samples and events of a time range.

// Exporters are the exporters of DESIGN §6, in the order WriteOpenMetrics
// writes their families: the model server, NVIDIA DCGM, node_exporter and
// kube-state-metrics.
var Exporters = []string{"inference", "dcgm", "node", "kube-state-metrics"}

// ErrOutsideWindow is returned by WriteScrape for an instant outside the
// simulated window.
var ErrOutsideWindow = errors.New("sim: outside the simulated window")

// scrapeStep returns the index of the last scrape at or before t.
func (f *Fleet) scrapeStep(t time.Time) (int, bool) {
	d := t.Sub(f.opts.Start)
	if d < 0 {
		return 0, false
	}
	i := int(d / f.opts.Step)
	return i, i < f.nSteps
}

// WriteOpenMetricsBefore writes, like WriteOpenMetrics, every exporter's
// scrapes with a time before t (with timestamps, ending with "# EOF"): the
// history a live run backfills before it starts serving.
func (f *Fleet) WriteOpenMetricsBefore(w io.Writer, t time.Time, progress func(done, total int)) error {
	i, _ := f.scrapeStep(t)
	if !t.After(f.opts.Start) {
		return fmt.Errorf("sim: %s is not after the window start %s", t.Format(time.RFC3339), f.opts.Start.Format(time.RFC3339))
	}
	hi := i
	if f.at(f.stepTime(i)).Equal(t) || i >= f.nSteps {
		hi = i - 1
	}
	return f.writeOpenMetrics(w, progress, 0, min(hi, f.nSteps-1), allExporters)
}

// WriteScrape writes what exporter (one of Exporters) shows when scraped
// at t: the values of the last scrape at or before t as OpenMetrics text
// without timestamps (the scraper stamps them), ending with "# EOF".
// Outside the window it returns ErrOutsideWindow.
func (f *Fleet) WriteScrape(w io.Writer, exporter string, t time.Time) error {
	i, ok := f.scrapeStep(t)
	if !ok {
		return ErrOutsideWindow
	}
	k := -1
	for j, e := range Exporters {
		if e == exporter {
			k = j
		}
	}
	if k < 0 {
		return fmt.Errorf("sim: unknown exporter %q (want one of %v)", exporter, Exporters)
	}
	f.run()
	o := &omWriter{f: f, w: bufio.NewWriterSize(w, 1<<16), window: true, lo: i, hi: i, noTS: true}
	o.ts = make([][]byte, f.nSteps)
	allExporters[k](o)
	o.raw("# EOF\n")
	if o.err != nil {
		return o.err
	}
	return o.w.Flush()
}

// SamplesBetween yields the kept request samples (as Samples does) whose
// time lies in [from, to), in time order.
func (f *Fleet) SamplesBetween(from, to time.Time) iter.Seq[correlate.Sample] {
	f.run()
	lo := from.Sub(f.opts.Start).Seconds()
	hi := to.Sub(f.opts.Start).Seconds()
	first := sort.Search(len(f.samples), func(i int) bool { return f.samples[i].entry >= lo })
	return func(yield func(correlate.Sample) bool) {
		for i := first; i < len(f.samples); i++ {
			if f.samples[i].entry >= hi {
				return
			}
			s := f.sample(&f.samples[i])
			// The sample's time is rounded to the millisecond: keep the
			// half-open range exact on that time.
			if s.Time.Before(from) {
				continue
			}
			if !s.Time.Before(to) {
				return
			}
			if !yield(s) {
				return
			}
		}
	}
}

// EventsBetween returns the pushed change events (as Events does) whose
// time lies in [from, to), in time order.
func (f *Fleet) EventsBetween(from, to time.Time) []correlate.Event {
	var out []correlate.Event
	for _, e := range f.Events() {
		if !e.Time.Before(from) && e.Time.Before(to) {
			out = append(out, e)
		}
	}
	return out
}
