package webhook

import (
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/wire"
)

// A receiver down for a working day's maintenance window still gets its
// deliveries: with the defaults, the waits between attempts add up to at
// least 8 hours at their shortest draw (12 attempts gave up after 1.2 h).
func TestDefaultRetriesOutlastEightHours(t *testing.T) {
	o := NewDispatcher(nil, Options{}).opt
	var least time.Duration
	for n := 1; n < o.MaxAttempts; n++ {
		least += shortestBackoff(n, o.BaseBackoff, o.MaxBackoff)
	}
	if least < 8*time.Hour {
		t.Errorf("%d attempts give up after %v at the shortest, want ≥ 8h", o.MaxAttempts, least)
	}
	for range 1000 {
		for n := 1; n < 30; n++ {
			if b, lo := backoff(n, o.BaseBackoff, o.MaxBackoff), shortestBackoff(n, o.BaseBackoff, o.MaxBackoff); b < lo || b > 2*lo {
				t.Fatalf("backoff(%d) = %v, outside [%v, %v]", n, b, lo, 2*lo)
			}
		}
	}
}

// shortestBackoff is backoff's least draw: half the doubled, capped wait.
func shortestBackoff(n int, base, most time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most) / 2
}

// A Slack message escapes what mrkdwn reads as markup: a title with
// "<!channel>" in it must not ping a channel, nor a "|" break the link.
func TestSlackMessageEscapesMarkup(t *testing.T) {
	m := message{Event: "incident.opened", View: wire.Incident{ID: 7, Title: "p99 <!channel> & <https://evil.example|click>", URL: "https://w.example/incidents/7",
		StartedAt: time.Unix(0, 0), TopCause: &wire.CauseSummary{Category: "unexplained", Score: 0.9, Summary: "No cause is strongly supported."}}}
	s := slackMessage(m)
	if strings.Contains(s.Text, "<!channel>") || strings.Contains(s.Text, "<https://evil") {
		t.Errorf("text %q", s.Text)
	}
	section := s.Blocks[0].Text.Text
	if strings.Contains(section, "<!channel>") || strings.Contains(section, "<https://evil") || !strings.Contains(section, "&lt;!channel&gt; &amp;") {
		t.Errorf("section %q", section)
	}
	if !strings.Contains(section, "no cause stands out") || strings.Contains(section, "0.90") {
		t.Errorf("unexplained as a cause: %q", section)
	}
}
