package pull

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/promtest"
)

// runP99 starts a real Prometheus holding the gauge p99_ms of models
// m-0 … m-(models-1), one point every 15 s from three hours ago
// (points of them), and returns it with the first point's time.
func runP99(t *testing.T, models, points int) (*promtest.Prometheus, time.Time) {
	t.Helper()
	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	return promtest.Run(t, strings.NewReader(p99OpenMetrics(models, points, start))), start
}

// p99OpenMetrics is the gauge p99_ms of models m-0 … m-(models-1), one
// point every 15 s from start, as OpenMetrics text for a backfill.
func p99OpenMetrics(models, points int, start time.Time) string {
	var om strings.Builder
	om.WriteString("# TYPE p99_ms gauge\n")
	for i := 0; i < points; i++ {
		for m := 0; m < models; m++ {
			fmt.Fprintf(&om, "p99_ms{model=\"m-%d\"} %d %d\n", m, 100+i%17+m, start.Add(time.Duration(i)*15*time.Second).Unix())
		}
	}
	om.WriteString("# EOF\n")
	return om.String()
}
