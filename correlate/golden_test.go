package correlate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/sim"
)

var update = flag.Bool("update", false, "rewrite the golden analyses in testdata/analysis from the current code")

// TestGoldenAnalyses pins the whole analysis of one simulated incident per
// scenario. Any change to the analysis shows as a diff of these files:
// regenerate them with
//
//	go test ./correlate -run TestGoldenAnalyses -update
//
// and review the diff like code.
func TestGoldenAnalyses(t *testing.T) {
	t.Parallel()
	for _, sc := range sim.Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			c := simulated(t, sc)
			got := goldenJSON(t, correlate.Analyze(c.input))
			path := filepath.Join("testdata", "analysis", string(sc)+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: run go test ./correlate -run TestGoldenAnalyses -update", err)
			}
			if d := firstDiff(want, got); d != "" {
				t.Errorf("analysis of the %s scenario differs from %s (%s); if the change is intended, rerun with -update and review the diff", sc, path, d)
			}
		})
	}
}

// TestAnalyzeIsDeterministic: the same input gives the same bytes, so the
// golden files (and stored analyses' digests) do not flap.
func TestAnalyzeIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, sc := range []sim.Scenario{sim.LocalReplica, sim.Capacity} {
		c := simulated(t, sc)
		a, b := goldenJSON(t, correlate.Analyze(c.clone())), goldenJSON(t, correlate.Analyze(c.clone()))
		if d := firstDiff(a, b); d != "" {
			t.Errorf("%s: two runs differ (%s)", sc, d)
		}
	}
}

// goldenJSON renders an analysis as indented JSON with numbers rounded to
// five significant digits: enough to see every real change, few enough
// that a different CPU's last bits do not show.
func goldenJSON(t testing.TB, a correlate.Analysis) []byte {
	t.Helper()
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(roundNumbers(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func roundNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = roundNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = roundNumbers(e)
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return x
		}
		f, err := x.Float64()
		if err != nil || f == 0 || math.IsInf(f, 0) {
			return x
		}
		return json.Number(strconv.FormatFloat(f, 'g', 5, 64))
	}
	return v
}

// firstDiff describes the first differing line of two texts, "" if equal.
func firstDiff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, strings.TrimSpace(w), strings.TrimSpace(g))
		}
	}
	return "lengths differ"
}

// Causes are sorted by score (the API's contract), "unexplained" included:
// it came first with a score of 0, so a client taking the highest score
// read a different cause than the top one.
func TestCausesSortedByScore(t *testing.T) {
	t.Parallel()
	for _, sc := range sim.Scenarios {
		a := correlate.Analyze(simulated(t, sc).input)
		for i := 1; i < len(a.Causes); i++ {
			if a.Causes[i].Score > a.Causes[i-1].Score {
				t.Errorf("%s: %s (%.3f) after %s (%.3f)", sc, a.Causes[i].Category, a.Causes[i].Score, a.Causes[i-1].Category, a.Causes[i-1].Score)
			}
		}
	}
	quiet := correlate.Analyze(correlate.Input{})
	if len(quiet.Causes) == 0 || quiet.Causes[0].Category != correlate.CatUnexplained || quiet.Causes[0].Score <= 0 {
		t.Errorf("nothing to explain: causes %+v", quiet.Causes)
	}
}
