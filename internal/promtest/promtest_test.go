package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestBackfillSplitAndRestart(t *testing.T) {
	// 5 hours of a gauge and a counter at 60 s: three 2-hour windows.
	t0 := time.Date(2026, 10, 6, 5, 30, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("# HELP g A gauge.\n# TYPE g gauge\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "g{k=\"a b\"} %d %d\n", i, t0.Add(time.Duration(i)*time.Minute).Unix())
	}
	b.WriteString("# TYPE c counter\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "c_total %d %d\n", 2*i, t0.Add(time.Duration(i)*time.Minute).Unix())
	}
	b.WriteString("# EOF\n")
	p := Run(t, strings.NewReader(b.String()))
	count := func(q string) float64 {
		t.Helper()
		u := p.URL + "/api/v1/query?" + url.Values{"query": {q}, "time": {fmt.Sprint(t0.Add(299 * time.Minute).Unix())}}.Encode()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Data.Result) != 1 {
			t.Fatalf("query %s: %v %+v", q, err, r)
		}
		var v float64
		fmt.Sscan(r.Data.Result[0].Value[1].(string), &v)
		return v
	}
	if n := count(`count_over_time(g[6h])`); n != 300 {
		t.Fatalf("gauge samples = %v, want 300 (all windows backfilled)", n)
	}
	if n := count(`count_over_time(c_total[6h])`); n != 300 {
		t.Fatalf("counter samples = %v, want 300", n)
	}
	p.Stop(t)
	if _, err := http.Get(p.URL + "/-/ready"); err == nil {
		t.Fatal("prometheus still answers after Stop")
	}
	p.Start(t)
	if n := count(`count_over_time(g[6h])`); n != 300 {
		t.Fatalf("after restart: %v samples", n)
	}
}
