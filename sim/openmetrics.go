package sim

import (
	"bufio"
	"io"
	"math"
	"strconv"
)

// WriteOpenMetrics streams every metric of DESIGN §6 as OpenMetrics text
// fit for `promtool tsdb create-blocks-from openmetrics`: one family after
// the other (HELP, TYPE, then its series), each series' samples in
// ascending time with timestamps in seconds, histogram and summary points
// grouped per timestamp, counters named *_total in *_total-less families,
// and a final "# EOF". Only per-step numbers are held in memory; the text
// is written as it is made. progress, if not nil, is called after each
// series with the number of series written and the total.
func (f *Fleet) WriteOpenMetrics(w io.Writer, progress func(done, total int)) error {
	return f.writeOpenMetrics(w, progress, 0, f.nSteps-1, allExporters)
}

// allExporters are the four exporters' sections, in the order
// WriteOpenMetrics writes them.
var allExporters = []func(*omWriter){
	(*omWriter).writeInference,
	(*omWriter).writeGPU,
	(*omWriter).writeNode,
	(*omWriter).writeKube,
}

// writeOpenMetrics writes the scrapes lo..hi (inclusive) of the given
// sections, with timestamps.
func (f *Fleet) writeOpenMetrics(w io.Writer, progress func(done, total int), lo, hi int, sections []func(*omWriter)) error {
	f.run()
	o := &omWriter{f: f, w: bufio.NewWriterSize(w, 1<<18), progress: progress, window: true, lo: lo, hi: hi}
	o.ts = make([][]byte, f.nSteps)
	start := f.opts.Start.Unix()
	for i := range o.ts {
		o.ts[i] = strconv.AppendInt([]byte{' '}, start+int64(i)*int64(f.step), 10)
	}
	// The first pass only counts series, for the progress total.
	if progress != nil {
		o.counting = true
		for _, s := range sections {
			s(o)
		}
		o.total, o.counting = o.done, false
		o.done = 0
	}
	for _, s := range sections {
		s(o)
		if o.err != nil {
			return o.err
		}
	}
	o.raw("# EOF\n")
	if o.err != nil {
		return o.err
	}
	return o.w.Flush()
}

// omWriter renders lines into a reusable buffer.
type omWriter struct {
	f        *Fleet
	w        *bufio.Writer
	buf      []byte
	ts       [][]byte // " <unix seconds>" per step
	err      error
	progress func(done, total int)
	counting bool
	done     int
	total    int
	window   bool // write only the scrapes lo..hi
	lo, hi   int
	noTS     bool // leave timestamps out (a live scrape: the scraper stamps them)
}

func (o *omWriter) raw(s string) {
	if o.err == nil && !o.counting {
		_, o.err = o.w.WriteString(s)
	}
}

// family writes the HELP and TYPE lines of a family.
func (o *omWriter) family(name, typ, help string) {
	o.raw("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// seriesDone counts one series for progress; it reports whether the series
// should be written (false in the counting pass or after an error).
func (o *omWriter) seriesDone() {
	o.done++
	if !o.counting && o.progress != nil {
		o.progress(o.done, o.total)
	}
}

// skip reports whether series bodies should be skipped.
func (o *omWriter) skip() bool { return o.counting || o.err != nil }

// sample writes `name{labels} value ts`. labels is the rendered label set
// without braces; value is already formatted into val.
func (o *omWriter) sample(name string, labels []byte, extra string, val []byte, step int) {
	if o.window && (step < o.lo || step > o.hi) {
		return
	}
	b := append(o.buf[:0], name...)
	b = append(b, '{')
	b = append(b, labels...)
	if extra != "" {
		if len(labels) > 0 {
			b = append(b, ',')
		}
		b = append(b, extra...)
	}
	b = append(b, '}', ' ')
	b = append(b, val...)
	if !o.noTS {
		b = append(b, o.ts[step]...)
	}
	b = append(b, '\n')
	o.buf = b
	if _, err := o.w.Write(b); err != nil && o.err == nil {
		o.err = err
	}
}

// valBuf is reusable scratch space for formatted values; the slice it
// returns is valid until its next use.
type valBuf struct{ b []byte }

func (v *valBuf) uint(x uint64) []byte {
	v.b = strconv.AppendUint(v.b[:0], x, 10)
	return v.b
}

// float formats x rounded to dec decimals, shortest form.
func (v *valBuf) float(x float64, dec int) []byte {
	p := math.Pow10(dec)
	v.b = strconv.AppendFloat(v.b[:0], math.Round(x*p)/p, 'f', -1, 64)
	return v.b
}

// labelSet renders k="v" pairs (values escaped as OpenMetrics requires).
func labelSet(kv ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, kv[i]...)
		b = append(b, '=', '"')
		for _, c := range []byte(kv[i+1]) {
			switch c {
			case '\\':
				b = append(b, '\\', '\\')
			case '"':
				b = append(b, '\\', '"')
			case '\n':
				b = append(b, '\\', 'n')
			default:
				b = append(b, c)
			}
		}
		b = append(b, '"')
	}
	return b
}

// noise is a deterministic uniform value in [0, 1) for (key, step), for
// jitter in exported gauges without touching the simulation's streams.
func (f *Fleet) noise(key uint64, step int) float64 {
	return float64(mix(key^uint64(step)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
}

// stepTime is scrape i's time in seconds from the start.
func (f *Fleet) stepTime(i int) float64 { return float64(i) * f.step }

// stepRange returns the scrapes [first, last] whose time lies in
// [from, to], or first > last when none does.
func (f *Fleet) stepRange(from, to float64) (int, int) {
	first := 0
	if from > 0 {
		first = int(math.Ceil(from / f.step))
	}
	last := f.nSteps - 1
	if to < f.stepTime(last) {
		last = int(math.Floor(to / f.step))
	}
	return first, last
}
