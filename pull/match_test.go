package pull

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

func TestWithMatchers(t *testing.T) {
	const m = `cluster="a"`
	for _, c := range []struct{ in, want string }{
		{`x`, `x{cluster="a"}`},
		{`rate(x[1m])`, `rate(x{cluster="a"}[1m])`},
		{`x{}`, `x{cluster="a"}`},
		{`x{mode="idle", node!=""}`, `x{cluster="a", mode="idle", node!=""}`},
		{`vllm:e2e_request_latency_seconds_bucket{le="+Inf"}`, `vllm:e2e_request_latency_seconds_bucket{cluster="a", le="+Inf"}`},
		{`histogram_quantile(0.99, sum by (le, model) (rate(x_bucket[1m]))) * 1000`,
			`histogram_quantile(0.99, sum by (le, model) (rate(x_bucket{cluster="a"}[1m]))) * 1000`},
		{`sum(rate(x[5m])) by (job) / on (job) group_left (node) max without (pod) (y)`,
			`sum(rate(x{cluster="a"}[5m])) by (job) / on (job) group_left (node) max without (pod) (y{cluster="a"})`},
		{`label_replace(x{p!=""}, "pod", "$1", "exported_pod", "(.+)") or y * 100`,
			`label_replace(x{cluster="a", p!=""}, "pod", "$1", "exported_pod", "(.+)") or y{cluster="a"} * 100`},
		{`x{a="}{"} offset 5m > bool 1e3`, `x{cluster="a", a="}{"} offset 5m > bool 1e3`},
		{`{__name__=~"a|b"}`, `{cluster="a", __name__=~"a|b"}`},
		{`max_over_time(x[1h:1m]) or vector(0) + Inf`, `max_over_time(x{cluster="a"}[1h:1m]) or vector(0) + Inf`},
	} {
		got, err := withMatchers(c.in, m)
		if err != nil || got != c.want {
			t.Errorf("withMatchers(%s)\n got %s (%v)\nwant %s", c.in, got, err, c.want)
		}
	}
	if _, err := withMatchers(`x{a="b}`, m); err == nil {
		t.Error("an unclosed string is no error")
	}
	if got, _ := withMatchers(`rate(x[1m])`, ""); got != `rate(x[1m])` {
		t.Errorf("no match changed the query: %s", got)
	}
	for _, bad := range []string{"match: {__name__: x}\n", "match: {1a: x}\n"} {
		if _, err := ParseConfig("test.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "match") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

func TestVectorSelectors(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`x`, []string{`x`}},
		{`histogram_quantile(0.99, sum by (le, model) (rate(x_bucket{job="a"}[1m]))) * 1000`, []string{`x_bucket{job="a"}`}},
		{`sum(rate(x[5m])) by (job) / on (job) group_left (node) max without (pod) (y) or x`, []string{`x`, `y`}},
		{`x {a="}{"} offset 5m > bool 1e3`, []string{`x{a="}{"}`}},
		{`{__name__=~"a|b"} + {} * vector(0)`, []string{`{__name__=~"a|b"}`, `{}`}},
	} {
		got, err := vectorSelectors(c.in)
		if err != nil || strings.Join(got, " ; ") != strings.Join(c.want, " ; ") {
			t.Errorf("vectorSelectors(%s) = %q (%v), want %q", c.in, got, err, c.want)
		}
	}
}

// twinClusters copies every sample of an OpenMetrics text into cluster
// "a" as it is and into cluster "b" scaled by a factor of its own series
// (so sums, ratios and quantiles all differ): a Prometheus that holds two
// clusters of the same fleet.
func twinClusters(t *testing.T, om []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(om))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			out.WriteString(line + "\n")
			continue
		}
		f := strings.Fields(line)
		series, val, ts := strings.Join(f[:len(f)-2], " "), f[len(f)-2], f[len(f)-1]
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		with := func(c string) string {
			if i := strings.IndexByte(series, '{'); i >= 0 {
				return series[:i+1] + `cluster="` + c + `",` + series[i+1:]
			}
			return series + `{cluster="` + c + `"}`
		}
		h := fnv.New32a()
		h.Write([]byte(series))
		fmt.Fprintf(&out, "%s %s %s\n%s %g %s\n", with("a"), val, ts, with("b"), v*float64(2+h.Sum32()%5), ts)
	}
	return out.Bytes()
}

// One Prometheus holding two clusters of the same fleet: with match:
// {cluster: a}, every curve and every change event is cluster a's, as if
// it were alone — no sum adds b's traffic, no join takes b's pods.
func TestMatchReadsOneClusterOfASharedPrometheus(t *testing.T) {
	f := eventsFleet()
	var om bytes.Buffer
	if err := f.WriteOpenMetrics(&om); err != nil {
		t.Fatal(err)
	}
	alone := promtest.Run(t, bytes.NewReader(om.Bytes()))
	shared := promtest.Run(t, bytes.NewReader(twinClusters(t, om.Bytes())))
	end := f.Start.Add(time.Duration(f.Steps-1) * f.Step)
	pull := func(url, yaml string) (map[string]float64, []string) {
		st := storetest.New(t)
		p := newPuller(t, st, url, yaml, end)
		if err := p.config().Validate(context.Background(), Backend{URL: url}, end); err != nil {
			t.Fatal(err)
		}
		if _, err := p.History(context.Background(), f.Start, end, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := st.Curves(context.Background(), store.CurveFilter{From: f.Start, To: end.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		vals := map[string]float64{}
		for _, c := range cs {
			sum := 0.0
			for _, pt := range c.Points {
				sum += pt.V
			}
			vals[c.Key()] = sum
		}
		return vals, eventStrings(t, st, f)
	}
	want, wantEvents := pull(alone.URL, "presets: [inference]\n")
	got, gotEvents := pull(shared.URL, "presets: [inference]\nmatch: {cluster: a}\n")
	if len(want) < 20 {
		t.Fatalf("fixture: %d curves", len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !near(g, w) {
			t.Errorf("%s: %v with match in the shared Prometheus, %v alone", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("curve %s only in the shared Prometheus", k)
		}
	}
	if strings.Join(gotEvents, "\n") != strings.Join(wantEvents, "\n") {
		t.Errorf("events with match:\n%s\nalone:\n%s", strings.Join(gotEvents, "\n"), strings.Join(wantEvents, "\n"))
	}
	// Without match the two clusters add up: the test can fail.
	if mixed, _ := pull(shared.URL, "presets: [inference]\n"); near(mixed["qps|model|model=chat"], want["qps|model|model=chat"]) {
		t.Error("fixture: without match the shared Prometheus reads the same traffic")
	}
}
