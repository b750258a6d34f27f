package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
)

// The home page listed the 100 newest open incidents and said nothing of
// the others (the longest-running were the ones missing); it now says how
// many there are and pages to the older ones.
func TestHomePagesOpenIncidents(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	var oldest int64
	for i := 0; i < 120; i++ {
		in, err := e.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("open-%03d", i), Start: testNow.Add(-time.Duration(120-i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			oldest = in.ID
		}
	}
	w := e.browser()
	w.login(e.read)
	home := w.get("/")
	sec := home.testid("open-incidents")
	if n := sec.Find(`[data-testid="incident-row"]`).Length(); n != 100 {
		t.Errorf("%d rows on the first page", n)
	}
	if txt := home.testid("open-count").Text(); !strings.Contains(txt, "100 of 120") {
		t.Errorf("count %q", txt)
	}
	older, ok := home.testid("open-older").Attr("href")
	if !ok {
		t.Fatal("no link to the older open incidents")
	}
	page2 := w.get(older)
	rows := page2.testid("open-incidents").Find(`[data-testid="incident-row"]`).Length()
	if rows != 20 || !strings.Contains(page2.body, fmt.Sprintf(`href="/incidents/%d"`, oldest)) {
		t.Errorf("second page: %d rows, oldest #%d there: %v", rows, oldest, strings.Contains(page2.body, fmt.Sprintf(`href="/incidents/%d"`, oldest)))
	}
	if p := w.get("/?open_cursor=garbage"); p.status != 400 {
		t.Errorf("a bad cursor: %d", p.status)
	}
}

// "Recently resolved" is by resolution: an incident that ran three days
// and was resolved a minute ago was missing behind ten resolved
// yesterday that had started later.
func TestHomeRecentlyResolvedByResolution(t *testing.T) {
	e := newAPIEnv(t)
	ctx := context.Background()
	long, err := e.st.CreateIncident(ctx, store.NewIncident{Title: "long-running", Start: testNow.Add(-72 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		in, err := e.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("short-%d", i), Start: testNow.Add(-24*time.Hour + time.Duration(i)*time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.ResolveIncident(ctx, in.ID, testNow.Add(-20*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.ResolveIncident(ctx, long.ID, testNow.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	w := e.browser()
	w.login(e.read)
	sec := w.get("/").testid("recent-incidents")
	if first := sec.Find(`[data-testid="incident-row"] a`).First().Text(); first != "long-running" {
		t.Errorf("first under Recently resolved: %q, want the one resolved a minute ago", first)
	}
}
