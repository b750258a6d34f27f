package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/store/storetest"
)

// A serve started while Prometheus cannot be asked reads the built-in
// presets, and puts the detected ones in effect once Prometheus answers:
// it read inference_* (nothing, on a vLLM fleet) until it was restarted.
func TestPresetsDetectedOncePrometheusAnswers(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Minute).Add(-3 * time.Hour)
	var om strings.Builder
	om.WriteString("# HELP vllm:e2e_request_latency_seconds vLLM latency.\n# TYPE vllm:e2e_request_latency_seconds histogram\n")
	for i := range 40 {
		at := start.Add(time.Duration(i) * 15 * time.Second).Unix()
		fmt.Fprintf(&om, "vllm:e2e_request_latency_seconds_bucket{model_name=\"llama\",pod=\"vllm-0\",le=\"+Inf\"} %d %d\n", 4*i, at)
		fmt.Fprintf(&om, "vllm:e2e_request_latency_seconds_count{model_name=\"llama\",pod=\"vllm-0\"} %d %d\n", 4*i, at)
		fmt.Fprintf(&om, "vllm:e2e_request_latency_seconds_sum{model_name=\"llama\",pod=\"vllm-0\"} %g %d\n", 0.6*float64(i), at)
	}
	om.WriteString("# EOF\n")
	prom := promtest.Run(t, strings.NewReader(om.String()))
	target, _ := url.Parse(prom.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var up atomic.Bool // Prometheus "down" until set
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	cfg, err := pull.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inEffect, asked := detectPresets(ctx, cfg, pull.Backend{URL: front.URL}, time.Now(), log)
	if asked {
		t.Fatal("presets detected from a Prometheus that answers 503")
	}
	p, err := pull.New(inEffect, pull.Backend{URL: front.URL}, storetest.New(t), pull.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hasVLLM := func() bool {
		return slices.ContainsFunc(p.Sources(), func(s string) bool { return strings.HasPrefix(s, "vllm/") })
	}
	if hasVLLM() {
		t.Fatal("vllm sources before detection")
	}
	go redetectPresets(ctx, cfg, pull.Backend{URL: front.URL}, 50*time.Millisecond, p, log)
	time.Sleep(200 * time.Millisecond)
	up.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for !hasVLLM() {
		if time.Now().After(deadline) {
			t.Fatalf("sources after Prometheus came back: %v", p.Sources())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
