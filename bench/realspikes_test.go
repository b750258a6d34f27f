package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// realSeries is one labelled real series (TimeStamp,Value,Label).
type realSeries struct {
	name   string
	times  []int64 // unix ms
	vals   []float64
	labels []bool
	step   time.Duration
}

// realDataDir is the labelled real corpus: WATERLINE_REALDATA, or the
// shared development set next to the repository.
func realDataDir(tb testing.TB) string {
	dir := os.Getenv("WATERLINE_REALDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "realdata", "ms-cloud-monitoring")
	}
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("labelled real series not found at %s (set WATERLINE_REALDATA to a folder of TimeStamp,Value,Label CSVs): %v", dir, err)
	}
	return dir
}

func loadRealSeries(tb testing.TB, dir string) []realSeries {
	var out []realSeries
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".csv") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r := csv.NewReader(f)
		head, err := r.Read()
		if err != nil {
			return err
		}
		col := map[string]int{}
		for i, h := range head {
			col[strings.TrimSpace(h)] = i
		}
		rel, _ := filepath.Rel(dir, path)
		s := realSeries{name: rel}
		var last int64 = math.MinInt64
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			ts := strings.Trim(strings.TrimSpace(rec[col["TimeStamp"]]), `"`)
			t, err := time.Parse(time.RFC3339, ts)
			if err != nil {
				t, err = time.Parse("2006-01-02 15:04:05", ts)
			}
			if err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
			vs := strings.TrimSpace(rec[col["Value"]])
			if vs == "" || t.UnixMilli() <= last {
				continue
			}
			v, err := strconv.ParseFloat(vs, 64)
			if err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
			lab := false
			if i, ok := col["Label"]; ok && i < len(rec) {
				l, _ := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
				lab = l != 0
			}
			last = t.UnixMilli()
			s.times, s.vals, s.labels = append(s.times, last), append(s.vals, v), append(s.labels, lab)
		}
		if len(s.times) < 10 {
			return nil
		}
		d := make([]int64, len(s.times)-1)
		for i := range d {
			d[i] = s.times[i+1] - s.times[i]
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		s.step = time.Duration(d[len(d)/2]) * time.Millisecond
		out = append(out, s)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// grid is what a Prometheus range query at step over [from, to] returns for
// the series: the last sample within a 2 h look-back at each step.
func (s realSeries) grid(from, to int64) []correlate.Point {
	stepMs := s.step.Milliseconds()
	var out []correlate.Point
	j := 0
	for t := from; t <= to; t += stepMs {
		for j < len(s.times) && s.times[j] <= t {
			j++
		}
		if j == 0 || t-s.times[j-1] > 2*time.Hour.Milliseconds() {
			continue
		}
		out = append(out, correlate.Point{T: t, V: s.vals[j-1]})
	}
	return out
}

// detections runs the detector the way GET /api/v1/spikes?query= does, in
// the chunks ../shared/eval/realspikes asks for (at most 720 h and 10,000
// steps; a later chunk's first 48 h only warm it up), and returns the
// indexes of the points at which spikes were raised.
func (s realSeries) detections(opt correlate.SpikeOptions) []int {
	opt.Step, opt.Direction = s.step, correlate.Both
	span := min(720*time.Hour, 10000*s.step).Milliseconds()
	warm := (48 * time.Hour).Milliseconds()
	first, lastT := s.times[0], s.times[len(s.times)-1]
	var det []int
	for lo := first; ; {
		hi := min(lastT, lo+span)
		pts := s.grid(lo-opt.History().Milliseconds(), hi)
		for _, sp := range correlate.DetectSpikes(pts, opt) {
			if sp.Onset.UnixMilli() < lo || sp.Onset.UnixMilli() >= hi {
				continue
			}
			at := sp.DetectedAt.UnixMilli()
			if lo != first && at < lo+warm {
				continue
			}
			i := sort.Search(len(s.times), func(i int) bool { return s.times[i] >= at })
			det = append(det, min(i, len(s.times)-1))
		}
		if hi >= lastT {
			break
		}
		lo = hi - warm
	}
	return det
}

// nabWindows are the NAB windows around the labelled segments.
func nabWindows(labels []bool) [][2]int {
	n := len(labels)
	var segs [][2]int
	for i := 0; i < n; i++ {
		if labels[i] {
			j := i
			for j+1 < n && labels[j+1] {
				j++
			}
			segs = append(segs, [2]int{i, j})
			i = j
		}
	}
	if len(segs) == 0 {
		return nil
	}
	width := max(2, int(0.10*float64(n)/float64(len(segs))))
	var spans [][2]int
	for _, sg := range segs {
		l, r := max(0, sg[0]-width/2), min(n-1, max(sg[1], sg[0]+width-width/2))
		if len(spans) > 0 && l <= spans[len(spans)-1][1] {
			spans[len(spans)-1][1] = max(r, spans[len(spans)-1][1])
		} else {
			spans = append(spans, [2]int{l, r})
		}
	}
	return spans
}

func nabSig(x float64) float64 {
	if x > 3 {
		return -1
	}
	return 2/(1+math.Exp(5*x)) - 1
}

type nabScore struct {
	raw                        float64
	windows, found, fp, scored int
}

// nab scores detections the way ../shared/eval/realspikes does (NAB standard
// profile: A_TP 1, A_FN 1, A_FP 0.11; first 15 % of points, at most 750, a
// warm-up).
func nab(n int, spans [][2]int, det []int) nabScore {
	prob := min(int(math.Floor(0.15*float64(n))), 750)
	seen := map[int]bool{}
	var ds []int
	for _, i := range det {
		if i >= prob && !seen[i] {
			seen[i] = true
			ds = append(ds, i)
		}
	}
	sort.Ints(ds)
	top := nabSig(-1)
	hit := map[int]float64{}
	var sc nabScore
	for _, i := range ds {
		inside, prev := -1, [2]int{-1, -1}
		for k, sp := range spans {
			if sp[0] <= i && i <= sp[1] {
				inside = k
				break
			}
			if sp[1] < i {
				prev = sp
			}
		}
		if inside >= 0 {
			l, r := spans[inside][0], spans[inside][1]
			v := nabSig(-float64(r-i+1)/float64(r-l+1)) / top
			if old, ok := hit[inside]; !ok || v > old {
				hit[inside] = v
			}
			continue
		}
		sc.fp++
		if prev[0] < 0 {
			sc.raw -= 0.11
		} else {
			sc.raw += 0.11 * nabSig(math.Abs(float64(prev[1]-i))/float64(max(1, prev[1]-prev[0])))
		}
	}
	for _, v := range hit {
		sc.raw += v
	}
	sc.raw -= float64(len(spans) - len(hit))
	sc.windows, sc.found, sc.scored = len(spans), len(hit), n-prob
	return sc
}

func (s nabScore) normalised() float64 {
	if s.windows == 0 {
		return math.NaN()
	}
	return 100 * (s.raw + float64(s.windows)) / (2 * float64(s.windows))
}

// TestRealSpikes scores the detector on labelled real production series
// with the NAB-style method of ../shared/eval/realspikes, without the
// Prometheus and HTTP round trips (the same chunks, grid and history), and
// prints the per-folder table, for each sensitivity.
func TestRealSpikes(t *testing.T) {
	dir := realDataDir(t)
	series := loadRealSeries(t, dir)
	for _, sens := range []correlate.Sensitivity{correlate.SensitivityLow, correlate.SensitivityHigh} {
		var tot nabScore
		for _, s := range series {
			sc := nab(len(s.times), nabWindows(s.labels), s.detections(correlate.SpikeOptions{Sensitivity: sens}))
			tot.raw, tot.windows, tot.found, tot.fp, tot.scored = tot.raw+sc.raw, tot.windows+sc.windows, tot.found+sc.found, tot.fp+sc.fp, tot.scored+sc.scored
		}
		t.Logf("sensitivity %-6s score %.1f; windows found %d/%d; %.2f false per 1k points", sens, tot.normalised(), tot.found, tot.windows, 1000*float64(tot.fp)/float64(max(1, tot.scored)))
	}
	groups := map[string]*nabScore{}
	var tot nabScore
	only := os.Getenv("REALSPIKES_ONLY")
	for _, s := range series {
		if only != "" && !strings.Contains(s.name, only) {
			continue
		}
		det := s.detections(correlate.SpikeOptions{})
		sc := nab(len(s.times), nabWindows(s.labels), det)
		if os.Getenv("REALSPIKES_DETAIL") != "" {
			t.Logf("%-60s windows %3d found %3d false %4d raw %7.2f", s.name, sc.windows, sc.found, sc.fp, sc.raw)
			if only != "" {
				t.Logf("  windows %v\n  detections %v", nabWindows(s.labels), det)
			}
		}
		g := groups[strings.Split(s.name, string(filepath.Separator))[0]]
		if g == nil {
			g = &nabScore{}
			groups[strings.Split(s.name, string(filepath.Separator))[0]] = g
		}
		for _, d := range []*nabScore{g, &tot} {
			d.raw += sc.raw
			d.windows += sc.windows
			d.found += sc.found
			d.fp += sc.fp
			d.scored += sc.scored
		}
	}
	names := make([]string, 0, len(groups))
	for k := range groups {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		g := groups[k]
		t.Logf("%-40s windows %4d found %4d false/1k pts %6.2f score %6.1f", k, g.windows, g.found, 1000*float64(g.fp)/float64(max(1, g.scored)), g.normalised())
	}
	fa := 1000 * float64(tot.fp) / float64(max(1, tot.scored))
	t.Logf("score %.1f; windows found %d/%d; false detections %d (%.2f per 1k points)", tot.normalised(), tot.found, tot.windows, tot.fp, fa)
	// The line the development set holds today (61.0 and 0.92; the goal is
	// 60 and 0.5): a change that loses ground fails here.
	if min, maxFA := 60.0, 0.95; tot.normalised() < min || fa > maxFA {
		t.Errorf("score %.1f (want ≥ %.0f), false alarms %.2f per 1k points (want ≤ %.1f)", tot.normalised(), min, fa, maxFA)
	}
}

// coarser is s averaged over every k points (a label where any of them
// had one), as a monitoring system that keeps 5-minute averages stores it.
func (s realSeries) coarser(k int) realSeries {
	out := realSeries{name: s.name, step: time.Duration(k) * s.step}
	for i := 0; i+k <= len(s.times); i += k {
		sum, lab := 0.0, false
		for j := i; j < i+k; j++ {
			sum += s.vals[j]
			lab = lab || s.labels[j]
		}
		out.times, out.vals, out.labels = append(out.times, s.times[i]), append(out.vals, sum/float64(k)), append(out.labels, lab)
	}
	return out
}

// TestRealSpikesCoarser scores the minute series of the development set
// averaged to 5 and 15 minutes: the same incidents at the steps much
// real monitoring keeps (CloudWatch's 5-minute metrics, a downsampled
// Prometheus), where a one-minute burst is a fifth as tall. It holds the
// line they reach today, so a change that helps the minute and hourly
// series but loses the coarser ones fails here.
func TestRealSpikesCoarser(t *testing.T) {
	var minute []realSeries
	for _, s := range loadRealSeries(t, realDataDir(t)) {
		if s.step == time.Minute {
			minute = append(minute, s)
		}
	}
	for _, c := range []struct {
		k   int
		min float64
	}{{5, 29}, {15, 19}} {
		var tot nabScore
		for _, s := range minute {
			cs := s.coarser(c.k)
			sc := nab(len(cs.times), nabWindows(cs.labels), cs.detections(correlate.SpikeOptions{}))
			tot.raw, tot.windows, tot.found, tot.fp, tot.scored = tot.raw+sc.raw, tot.windows+sc.windows, tot.found+sc.found, tot.fp+sc.fp, tot.scored+sc.scored
		}
		fa := 1000 * float64(tot.fp) / float64(max(1, tot.scored))
		t.Logf("%d minute series averaged to %2d min: score %.1f; windows found %d/%d; %.2f false per 1k points",
			len(minute), c.k, tot.normalised(), tot.found, tot.windows, fa)
		if tot.normalised() < c.min || fa > 0.9 {
			t.Errorf("at %d min: score %.1f (want ≥ %.0f), false alarms %.2f per 1k points (want ≤ 0.9)", c.k, tot.normalised(), c.min, fa)
		}
	}
}
