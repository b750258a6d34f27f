package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The deployment files are not run here (no Docker, no Kubernetes on the
// project's machines), so they are checked against the binary: every
// variable they set is one it reads and takes, the probes are its
// routes, the port is the one it listens on, and the grace period covers
// its drain. A renamed setting or route used to go unnoticed there.
func TestDeploymentFilesMatchTheBinary(t *testing.T) {
	known := map[string]bool{}
	for _, s := range flagSpecs(&config{}) {
		known[s.env] = true
	}
	// What serve needs after SIGTERM: the drain at the default request
	// timeout, then the webhook being sent (up to 10 s).
	var c config
	for _, s := range flagSpecs(&c) {
		if s.env == "WATERLINE_REQUEST_TIMEOUT" {
			if err := s.set(s.def); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := drainTimeout(c.RequestTimeout) + 10*time.Second
	checkEnv := func(file string, env map[string]string) {
		t.Helper()
		for name := range env {
			if !known[name] {
				t.Errorf("%s sets %s, which waterline does not read", file, name)
			}
		}
		// The values it sets must pass serve's own checks (secrets from
		// a Secret stand in as a valid URL).
		vals := map[string]string{}
		for k, v := range env {
			vals[k] = v
			if v == "" && k == "DATABASE_URL" {
				vals[k] = "postgres://u@db/w"
			}
		}
		if _, err := parseConfig("serve", nil, func(k string) string { return vals[k] }, io.Discard, nil); err != nil {
			t.Errorf("%s: serve refuses its settings: %v", file, err)
		}
	}

	// Kubernetes.
	raw, err := os.ReadFile("../../deploy/kubernetes/waterline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	kinds := map[string]bool{}
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Grace      int `yaml:"terminationGracePeriodSeconds"`
						Containers []struct {
							Args  []string `yaml:"args"`
							Ports []struct {
								Name string `yaml:"name"`
								Port int    `yaml:"containerPort"`
							} `yaml:"ports"`
							Env []struct {
								Name  string `yaml:"name"`
								Value string `yaml:"value"`
							} `yaml:"env"`
							Probes map[string]any `yaml:",inline"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("waterline.yaml: %v", err)
		}
		kinds[doc.Kind] = true
		if doc.Kind != "Deployment" {
			continue
		}
		pod := doc.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			t.Fatalf("%d containers", len(pod.Containers))
		}
		ct := pod.Containers[0]
		if len(ct.Args) != 1 || ct.Args[0] != "serve" {
			t.Errorf("args %v, want [serve]", ct.Args)
		}
		env := map[string]string{}
		for _, e := range ct.Env {
			env[e.Name] = e.Value
		}
		checkEnv("waterline.yaml", env)
		_, port, err := net.SplitHostPort(env["WATERLINE_ADDR"])
		if err != nil || len(ct.Ports) != 1 || ct.Ports[0].Name != "http" || port != strconv.Itoa(ct.Ports[0].Port) {
			t.Errorf("listens on %q, exposes %+v", env["WATERLINE_ADDR"], ct.Ports)
		}
		for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
			p, _ := ct.Probes[probe].(map[string]any)
			get, _ := p["httpGet"].(map[string]any)
			if path, _ := get["path"].(string); path != "/healthz" && path != "/readyz" || get["port"] != "http" {
				t.Errorf("%s: %v, want GET /healthz or /readyz on port http", probe, p)
			}
		}
		if time.Duration(pod.Grace)*time.Second < stop {
			t.Errorf("terminationGracePeriodSeconds %d; serve may need %s to stop", pod.Grace, stop)
		}
	}
	for _, k := range []string{"Deployment", "Service", "ServiceAccount", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("waterline.yaml has no %s", k)
		}
	}

	// Docker Compose.
	raw, err = os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Grace       string            `yaml:"stop_grace_period"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	wl, ok := compose.Services["waterline"]
	if !ok || len(wl.Command) != 1 || wl.Command[0] != "serve" {
		t.Fatalf("docker-compose.yml: waterline service %+v", wl)
	}
	checkEnv("docker-compose.yml", wl.Environment)
	if g, err := time.ParseDuration(wl.Grace); err != nil || g < stop {
		t.Errorf("stop_grace_period %q; serve may need %s to stop", wl.Grace, stop)
	}
	if !strings.HasPrefix(wl.Environment["WATERLINE_ADDR"], "0.0.0.0:") {
		t.Errorf("in a container, serve must listen on every interface: %q", wl.Environment["WATERLINE_ADDR"])
	}
}
