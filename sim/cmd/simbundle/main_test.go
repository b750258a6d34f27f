package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBundleLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "07-routing")
	var log bytes.Buffer
	if err := run([]string{"-out", dir, "-small", "-scenario", "routing", "-seed", "3", "-confounders"}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, name := range []string{"metrics.om.gz", "samples.ndjson.gz"} {
		fh, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := io.ReadAll(zr)
		fh.Close()
		if err != nil || len(data) == 0 {
			t.Fatalf("%s: %v, %d bytes", name, err, len(data))
		}
		if name == "metrics.om.gz" && !bytes.HasSuffix(data, []byte("# EOF\n")) {
			t.Errorf("metrics do not end with # EOF")
		}
	}
	var scen struct {
		Name        string `json:"name"`
		Start, End  string
		StepSeconds int `json:"step_seconds"`
		Models      []struct {
			Name  string  `json:"name"`
			SLOMs float64 `json:"slo_ms"`
		} `json:"models"`
	}
	var truth struct {
		Category string         `json:"category"`
		Target   map[string]any `json:"target"`
		Onset    string         `json:"onset"`
	}
	for name, v := range map[string]any{"scenario.json": &scen, "truth.json": &truth} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if scen.Name != "07-routing" || scen.StepSeconds != 15 || len(scen.Models) != 2 || scen.Start == "" {
		t.Errorf("scenario.json: %+v", scen)
	}
	if truth.Category != "routing" || truth.Target["model"] == nil || truth.Onset == "" {
		t.Errorf("truth.json: %+v", truth)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, "events.ndjson"))
	if !strings.Contains(string(ev), `"kind":"route_change"`) {
		t.Errorf("events.ndjson: %s", ev)
	}
	if !strings.Contains(log.String(), "metrics 100%") {
		t.Errorf("no progress on stderr: %s", log.String())
	}
}
