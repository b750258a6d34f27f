package webhook

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// ServiceNow Event Management files every event with the same message_key
// under one alert, whatever its source ("By default, each event is
// uniquely identified by the Message Key"). A bare incident id ("12")
// merged incident 12 of a staging and a production Waterline — and any
// other tool's event keyed "12" — into one alert, which either one's
// resolution then closed. The key names the installation, like Jira's
// globalId, and stays the same across an incident's events.
func TestServiceNowMessageKeyNamesTheInstallation(t *testing.T) {
	v := wire.Incident{ID: 12, Title: "p99 up", Status: store.IncidentOpen, URL: "https://a.example/incidents/12"}
	key := func(publicURL string, status, event string) string {
		v := v
		v.Status = status
		return serviceNowEvents(message{Event: event, At: time.Unix(0, 0), View: v}, publicURL).Records[0].MessageKey
	}
	prod := key("https://waterline.prod.example", store.IncidentOpen, store.EventIncidentOpened)
	staging := key("https://waterline.staging.example", store.IncidentOpen, store.EventIncidentOpened)
	if prod == staging {
		t.Errorf("incident 12 of two installations shares the message_key %q: one ServiceNow alert for both", prod)
	}
	if prod == "12" || !strings.Contains(prod, "waterline.prod.example") {
		t.Errorf("message_key %q does not name the installation", prod)
	}
	if r := key("https://waterline.prod.example", store.IncidentResolved, store.EventIncidentResolved); r != prod {
		t.Errorf("resolution's message_key %q differs from the opening's %q: the alert would never close", r, prod)
	}
	if len(prod) > 1024 {
		t.Errorf("message_key is %d long, ServiceNow keeps 1024", len(prod))
	}
}

// ServiceNow's em_event keeps node, resource, type and source to 100
// characters; Waterline's labels are up to 256 bytes each, and resource
// joins model and replica. They are clipped (on a character boundary,
// marked) rather than cut wherever the instance cuts them.
func TestServiceNowFieldsFitEventLimits(t *testing.T) {
	v := wire.Incident{ID: 3, Title: "p99 up", Status: store.IncidentOpen, URL: "https://a.example/incidents/3",
		Scope: wire.Scope{Model: strings.Repeat("m", 256), Replica: strings.Repeat("r", 256), Node: strings.Repeat("é", 128)}}
	rec := serviceNowEvents(message{Event: store.EventIncidentOpened, At: time.Unix(0, 0), View: v}, "https://a.example").Records[0]
	for name, s := range map[string]string{"node": rec.Node, "resource": rec.Resource, "type": rec.Type, "source": rec.Source} {
		if n := utf8.RuneCountInString(s); n > 100 || !utf8.ValidString(s) {
			t.Errorf("%s is %d characters (valid UTF-8: %v), ServiceNow keeps 100", name, n, utf8.ValidString(s))
		}
	}
	if !strings.HasPrefix(rec.Resource, "mmm") || !strings.HasPrefix(rec.Node, "éé") {
		t.Errorf("clipped node %q resource %q", rec.Node, rec.Resource)
	}
}

// Slack text is escaped (& < > as entities), then clipped: the cut fell
// inside an entity, and Slack showed "&am…" or "&l…" literally at the end
// of the notification line and the context.
func TestSlackClipKeepsEntitiesWhole(t *testing.T) {
	lt := strings.Repeat("<", 256)
	m := message{Event: store.EventIncidentOpened, View: wire.Incident{ID: 7, Title: strings.Repeat("&", 500), URL: "https://w.example/incidents/7",
		StartedAt: time.Unix(0, 0), Scope: wire.Scope{Model: lt, Version: lt, Tenant: lt, Replica: lt, Node: lt},
		TopCause: &wire.CauseSummary{Category: "release", Score: 0.8, Summary: strings.Repeat("a&b ", 1000)}}}
	s := slackMessage(m)
	texts := map[string]string{"text": s.Text, "section": s.Blocks[0].Text.Text, "context": s.Blocks[1].Elements[0].Text}
	for name, txt := range texts {
		for i := strings.IndexByte(txt, '&'); i >= 0; {
			rest := txt[i:]
			if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
				t.Errorf("%s: a broken entity at byte %d: %q", name, i, rest[:min(len(rest), 12)])
				break
			}
			j := strings.IndexByte(txt[i+1:], '&')
			if j < 0 {
				break
			}
			i += 1 + j
		}
		if n := utf8.RuneCountInString(txt); n > 3000 {
			t.Errorf("%s is %d characters, Slack takes 3000", name, n)
		}
	}
}

// A Slack message posted through a webhook gets no link preview unless it
// asks (Slack: "for messages posted via webhooks… we will unfurl links to
// media, but not other links"): the share link's card — headline, impact,
// chart — now comes with the incident's opening message, and only there.
func TestSlackUnfurlsTheShareLinkOnceAnIncidentOpens(t *testing.T) {
	view := wire.Incident{ID: 7, Title: "chat-8b slower", URL: "https://w.example/incidents/7", StartedAt: time.Unix(0, 0)}
	for _, c := range []struct {
		event, share string
		want         bool
	}{
		{store.EventIncidentOpened, "https://w.example/s/tok", true},
		{store.EventIncidentOpened, "", false}, // the private page: a login form to the crawler
		{store.EventAnalysisReady, "https://w.example/s/tok", false},
		{store.EventIncidentResolved, "https://w.example/s/tok", false},
	} {
		s := slackMessage(message{Event: c.event, View: view, Share: c.share})
		if s.UnfurlLinks != c.want {
			t.Errorf("%s with share %q: unfurl_links %v, want %v", c.event, c.share, s.UnfurlLinks, c.want)
		}
		body, _ := json.Marshal(s)
		if !strings.Contains(string(body), `"unfurl_links":`) {
			t.Errorf("%s: unfurl_links missing from %s", c.event, body)
		}
	}
}
