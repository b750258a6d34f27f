package pull

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A Prometheus URL's password never reaches an error (or the log line
// made of it): detecting presets and validating queries against an
// unreachable server printed it twice.
func TestPrometheusErrorsHideURLPasswords(t *testing.T) {
	url := "http://user:PromS3cret@127.0.0.1:1"
	c, err := ParseConfig("(test)", []byte("presets: [auto]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.DetectPresets(ctx, Backend{URL: url}, time.Now()); err == nil || strings.Contains(err.Error(), "PromS3cret") {
		t.Errorf("detect: %v", err)
	}
	v, err := ParseConfig("(test)", []byte("presets: []\nqueries:\n  - role: latency_p99\n    level: model\n    labels: {model: model}\n    expr: p99_ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(ctx, Backend{URL: url}, time.Now()); err == nil || strings.Contains(err.Error(), "PromS3cret") {
		t.Errorf("validate: %v", err)
	}
}
