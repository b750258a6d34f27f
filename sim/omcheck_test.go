package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// omPoint is one parsed sample.
type omPoint struct {
	t int64
	v float64
}

// omSeries is one parsed series: its sample name and labels.
type omSeries struct {
	name   string
	labels map[string]string
	points []omPoint
}

// omFile is what checkOpenMetrics parsed: kept series by key, line count
// and family types.
type omFile struct {
	series  map[string]*omSeries
	samples int
	types   map[string]string
}

// checkOpenMetrics parses OpenMetrics text and checks the rules promtool's
// backfill depends on and those of the format: HELP and TYPE before a
// family's samples, every family once and contiguous, sample names that fit
// the family type, integer-second timestamps inside [from, to], strictly
// ascending time per series, counters (and histogram/summary parts) never
// decreasing, histogram buckets cumulative over le with +Inf = _count, and
// a final "# EOF". keep selects the sample names whose points are returned.
func checkOpenMetrics(data []byte, from, to int64, keep func(name string) bool) (*omFile, error) {
	if !bytes.HasSuffix(data, []byte("# EOF\n")) {
		return nil, fmt.Errorf("does not end with # EOF")
	}
	out := &omFile{series: map[string]*omSeries{}, types: map[string]string{}}
	last := map[string]omPoint{} // every series, for order and monotonicity
	family, typ := "", ""
	// Histogram points of one label set at one time: buckets by le.
	type hkey struct {
		base string
		t    int64
	}
	buckets := map[hkey][][2]float64{}
	counts := map[hkey]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ln := 0
	eof := false
	for sc.Scan() {
		ln++
		line := sc.Text()
		if eof {
			return nil, fmt.Errorf("line %d: content after # EOF", ln)
		}
		if line == "# EOF" {
			eof = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			name := strings.Fields(line)[2]
			if _, seen := out.types[name]; seen {
				return nil, fmt.Errorf("line %d: family %s appears twice", ln, name)
			}
			family, typ = name, ""
			continue
		}
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) != 4 || f[2] != family {
				return nil, fmt.Errorf("line %d: TYPE without its HELP: %q", ln, line)
			}
			typ = f[3]
			out.types[family] = typ
			if typ == "counter" && strings.HasSuffix(family, "_total") {
				return nil, fmt.Errorf("line %d: counter family %s must not end in _total", ln, family)
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			return nil, fmt.Errorf("line %d: unexpected comment %q", ln, line)
		}
		if typ == "" {
			return nil, fmt.Errorf("line %d: sample before TYPE", ln)
		}
		name, labels, rest, err := splitSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", ln, err)
		}
		suffix, ok := strings.CutPrefix(name, family)
		if !ok || !suffixFits(typ, suffix) {
			return nil, fmt.Errorf("line %d: sample %s does not belong to %s family %s", ln, name, typ, family)
		}
		f := strings.Fields(rest)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want value and timestamp: %q", ln, rest)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || math.IsNaN(v) {
			return nil, fmt.Errorf("line %d: bad value %q", ln, f[0])
		}
		ts, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: timestamp %q is not integer seconds", ln, f[1])
		}
		if ts < from || ts > to {
			return nil, fmt.Errorf("line %d: timestamp %d outside [%d, %d]", ln, ts, from, to)
		}
		out.samples++
		key := name + "{" + labels + "}"
		if p, seen := last[key]; seen {
			if ts <= p.t {
				return nil, fmt.Errorf("line %d: %s: time %d not after %d", ln, key, ts, p.t)
			}
			monotone := typ == "counter" || typ == "histogram" || (typ == "summary" && suffix != "")
			if monotone && v < p.v {
				return nil, fmt.Errorf("line %d: counter %s decreased %v -> %v", ln, key, p.v, v)
			}
		}
		last[key] = omPoint{ts, v}
		lm := parseLabels(labels)
		if typ == "histogram" {
			base := family + "{" + withoutLE(labels) + "}"
			k := hkey{base, ts}
			switch suffix {
			case "_bucket":
				le := math.Inf(1)
				if lm["le"] != "+Inf" {
					le, _ = strconv.ParseFloat(lm["le"], 64)
				}
				buckets[k] = append(buckets[k], [2]float64{le, v})
			case "_count":
				counts[k] = v
				bs := buckets[k]
				if len(bs) == 0 || !math.IsInf(bs[len(bs)-1][0], 1) || bs[len(bs)-1][1] != v {
					return nil, fmt.Errorf("line %d: %s: _count %v without a matching +Inf bucket", ln, base, v)
				}
				for i := 1; i < len(bs); i++ {
					if bs[i][0] <= bs[i-1][0] || bs[i][1] < bs[i-1][1] {
						return nil, fmt.Errorf("line %d: %s: buckets not cumulative in le", ln, base)
					}
				}
				delete(buckets, k)
			}
		}
		if keep != nil && keep(name) {
			s := out.series[key]
			if s == nil {
				s = &omSeries{name: name, labels: lm}
				out.series[key] = s
			}
			s.points = append(s.points, omPoint{ts, v})
		}
	}
	if !eof {
		return nil, fmt.Errorf("no # EOF")
	}
	if len(buckets) > 0 {
		return nil, fmt.Errorf("%d histogram points without _count", len(buckets))
	}
	return out, sc.Err()
}

func suffixFits(typ, suffix string) bool {
	switch typ {
	case "counter":
		return suffix == "_total"
	case "histogram":
		return suffix == "_bucket" || suffix == "_count" || suffix == "_sum"
	case "summary":
		return suffix == "" || suffix == "_count" || suffix == "_sum"
	default:
		return suffix == ""
	}
}

// splitSample splits `name{labels} rest`.
func splitSample(line string) (name, labels, rest string, err error) {
	i := strings.IndexByte(line, '{')
	if i < 0 {
		sp := strings.IndexByte(line, ' ')
		if sp < 0 {
			return "", "", "", fmt.Errorf("no value: %q", line)
		}
		return line[:sp], "", line[sp+1:], nil
	}
	j := strings.LastIndex(line, "} ")
	if j < i {
		return "", "", "", fmt.Errorf("unterminated labels: %q", line)
	}
	return line[:i], line[i+1 : j], line[j+2:], nil
}

// parseLabels parses k="v",… (the simulator never needs escapes).
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			break
		}
		end := strings.IndexByte(s[eq+2:], '"')
		m[s[:eq]] = s[eq+2 : eq+2+end]
		s = strings.TrimPrefix(s[eq+2+end+1:], ",")
	}
	return m
}

func withoutLE(labels string) string {
	i := strings.Index(labels, `le="`)
	if i < 0 {
		return labels
	}
	return strings.TrimSuffix(labels[:i], ",")
}

// byLabel groups the kept series of a sample name by one label's value.
func (o *omFile) byLabel(name, label string) map[string][]*omSeries {
	out := map[string][]*omSeries{}
	keys := make([]string, 0, len(o.series))
	for k := range o.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := o.series[k]
		if s.name == name {
			out[s.labels[label]] = append(out[s.labels[label]], s)
		}
	}
	return out
}

// valueAt is the series' last value at or before t (ok false before it
// starts).
func (s *omSeries) valueAt(t int64) (float64, bool) {
	i := sort.Search(len(s.points), func(i int) bool { return s.points[i].t > t })
	if i == 0 {
		return 0, false
	}
	return s.points[i-1].v, true
}

// increase is the counter's increase over [t0, t1], counting from its
// first point when it starts inside the range.
func (s *omSeries) increase(t0, t1 int64) float64 {
	v1, ok := s.valueAt(t1)
	if !ok {
		return 0
	}
	v0, ok := s.valueAt(t0)
	if !ok {
		v0 = s.points[0].v
	}
	return v1 - v0
}

// The checker itself rejects what promtool would silently mangle.
func TestCheckOpenMetricsRejects(t *testing.T) {
	head := "# HELP c_x A counter.\n# TYPE c_x counter\n"
	bad := map[string]string{
		"no EOF":        head + "c_x_total 1 100\n",
		"out of order":  head + "c_x_total 1 100\nc_x_total 2 90\n# EOF\n",
		"decreasing":    head + "c_x_total 2 100\nc_x_total 1 115\n# EOF\n",
		"ms timestamps": head + "c_x_total 1 100000\n# EOF\n",
		"no _total":     head + "c_x 1 100\n# EOF\n",
		"twice":         head + "c_x_total 1 100\n" + head + "# EOF\n",
		"bad histogram": "# HELP h A histogram.\n# TYPE h histogram\nh_bucket{le=\"1.0\"} 3 100\nh_bucket{le=\"+Inf\"} 2 100\nh_count 2 100\nh_sum 1 100\n# EOF\n",
	}
	for name, text := range bad {
		if _, err := checkOpenMetrics([]byte(text), 0, 1000, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	good := head + "c_x_total 1 100\nc_x_total 1 115\n# EOF\n"
	if _, err := checkOpenMetrics([]byte(good), 0, 1000, nil); err != nil {
		t.Errorf("good file rejected: %v", err)
	}
}
