package webhook

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// message is what one delivery says, before it is put into a webhook's
// format.
type message struct {
	Event   string    // store.Event*
	At      time.Time // when it happened
	Version int       // analysis version, for analysis.ready and cause.changed
	PrevTop string    // the previous top cause, for cause.changed
	View    wire.Incident
	// Share is a read-only link to the incident, for webhooks that carry
	// one ("" otherwise, or once sharing was revoked).
	Share string
}

// render encodes m in one of the formats. publicURL names
// this Waterline (Jira's globalId, ServiceNow's event_class).
func render(format string, m message, publicURL string) ([]byte, error) {
	switch format {
	case store.WebhookFormatWaterline:
		return json.Marshal(waterlineBody(m))
	case store.WebhookFormatJira:
		return json.Marshal(jiraRemoteLink(m, publicURL))
	case store.WebhookFormatServiceNow:
		return json.Marshal(serviceNowEvents(m, publicURL))
	case store.WebhookFormatSlack:
		return json.Marshal(slackMessage(m))
	}
	return nil, fmt.Errorf("unknown webhook format %q", format)
}

// waterlineBody is the Waterline format (wire.WebhookEvent): the flat
// incident summary of GET /api/v1/incidents/{id}, plus what happened.
func waterlineBody(m message) wire.WebhookEvent {
	return wire.WebhookEvent{Incident: m.View, Event: m.Event, OccurredAt: m.At.UTC(), AnalysisVersion: m.Version, PreviousTopCause: m.PrevTop,
		ShareURL: m.Share}
}

// jiraIconPath is the 16×16 icon Jira shows next to the link.
const jiraIconPath = "/static/icon-16.png"

func jiraRemoteLink(m message, publicURL string) wire.JiraRemoteLink {
	v := m.View
	resolved := v.Status == store.IncidentResolved
	state := "open"
	if resolved {
		state = "resolved"
	}
	icon := wire.JiraIcon{URL16x16: publicURL + jiraIconPath, Title: "Waterline"}
	// The link opens for every ticket reader when it is a share link;
	// otherwise it is the permalink, behind sign-in.
	link := v.URL
	if m.Share != "" {
		link = m.Share
	}
	return wire.JiraRemoteLink{
		// ≤ 255 characters, Jira's limit: a host and an id always fit.
		GlobalID:     "system=" + publicHost(publicURL) + "&incident=" + strconv.FormatInt(v.ID, 10),
		Application:  wire.JiraApplication{Type: "dev.waterline", Name: "Waterline"},
		Relationship: "latency incident",
		Object: wire.JiraObject{
			URL:     link,
			Title:   clip(fmt.Sprintf("Waterline #%d: %s", v.ID, v.Title), 255),
			Summary: clip(state+" · "+causeLine(v), 255),
			Icon:    icon,
			Status:  wire.JiraStatus{Resolved: resolved, Icon: wire.JiraIcon{URL16x16: icon.URL16x16, Title: state}},
		},
	}
}

// ServiceNow severities: 1 critical … 5 OK, 0 clear.
const (
	snSeverityMajor = "2"
	snSeverityClear = "0"
)

// snFieldMax is em_event's limit on source, node, type and resource.
const snFieldMax = 100

func serviceNowEvents(m message, publicURL string) wire.ServiceNowEvents {
	v := m.View
	sev, state := snSeverityMajor, "New"
	if v.Status == store.IncidentResolved {
		sev, state = snSeverityClear, "Closing"
	}
	resource := v.Scope.Model
	if v.Scope.Replica != "" {
		resource = strings.TrimPrefix(resource+"/"+v.Scope.Replica, "/")
	}
	if resource == "" {
		resource = "inference fleet"
	}
	// Extra fields belong in additional_info (a JSON string), not in
	// custom columns.
	info, _ := json.Marshal(waterlineBody(m))
	class := "waterline@" + publicHost(publicURL)
	return wire.ServiceNowEvents{Records: []wire.ServiceNowEvent{{
		Source:     "Waterline",
		EventClass: class,
		// em_event keeps node and resource to 100 characters; labels are
		// up to 256 bytes, and resource joins two.
		Node:       clip(v.Scope.Node, snFieldMax),
		Resource:   clip(resource, snFieldMax),
		MetricName: "p99_latency",
		Type:       "latency_incident",
		// The message key alone picks the alert an event updates, across
		// every source of the instance: it names this Waterline, as Jira's
		// globalId does, so incident 12 of two installations (or another
		// tool's key "12") are not one alert.
		MessageKey:      class + "/incidents/" + strconv.FormatInt(v.ID, 10),
		Severity:        sev,
		Description:     clip(fmt.Sprintf("%s (%s). %s. %s%s", v.Title, m.Event, causeLine(v), v.URL, shareLine(m.Share)), 4000),
		AdditionalInfo:  string(info),
		TimeOfEvent:     m.At.UTC().Format("2006-01-02 15:04:05"),
		ResolutionState: state,
	}}}
}

// slackMessage is a Slack message (an incoming webhook's body, or
// chat.postMessage's without the channel): a notification line in text,
// and blocks with the incident linked — to its read-only link when the
// webhook carries one, since most of a channel has no Waterline account —
// what happened and the top cause, and its scope and time as context.
func slackMessage(m message) wire.SlackMessage {
	v := m.View
	what := map[string]string{
		store.EventIncidentOpened:   "opened",
		store.EventAnalysisReady:    "analysed",
		store.EventCauseChanged:     "top cause changed",
		store.EventIncidentResolved: "resolved",
	}[m.Event]
	if what == "" {
		what = m.Event
	}
	if m.Event == store.EventCauseChanged && m.PrevTop != "" {
		what += " (was " + m.PrevTop + ")"
	}
	link := v.URL
	if m.Share != "" {
		link = m.Share
	}
	title := fmt.Sprintf("Waterline #%d: %s", v.ID, v.Title)
	head := fmt.Sprintf("*<%s|%s>* · %s", slackEscape(link), slackEscape(clip(title, 200)), what)
	var ctx []string
	for _, kv := range [][2]string{{"model", v.Scope.Model}, {"version", v.Scope.Version}, {"tenant", v.Scope.Tenant},
		{"replica", v.Scope.Replica}, {"node", v.Scope.Node}} {
		if kv[1] != "" {
			ctx = append(ctx, kv[0]+" "+kv[1])
		}
	}
	ctx = append(ctx, "since "+v.StartedAt.UTC().Format("2006-01-02 15:04 UTC"))
	if m.Share != "" {
		ctx = append(ctx, "read-only link, no account needed")
	}
	return wire.SlackMessage{
		// The opening message of an incident with a read-only link gets
		// the link's card (its headline, impact and chart, from the share
		// page's Open Graph tags and og.png) where Slack can reach the
		// page; later events stay one line each, without the same card.
		UnfurlLinks: m.Event == store.EventIncidentOpened && m.Share != "",
		Text:        slackClip(slackEscape(fmt.Sprintf("%s %s: %s", title, what, causeLine(v))), 1000),
		Blocks: []wire.SlackBlock{
			{Type: "section", Text: &wire.SlackText{Type: "mrkdwn", Text: slackClip(head+"\n"+slackEscape(causeLine(v)), 3000)}},
			{Type: "context", Elements: []wire.SlackText{{Type: "mrkdwn", Text: slackClip(slackEscape(strings.Join(ctx, " · ")), 2000)}}},
		},
	}
}

// slackEscape escapes the three characters Slack's mrkdwn reads as markup
// (links and mentions): a title with "<!channel>" in it must not ping.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackClip is clip for escaped mrkdwn: the cut never splits an entity
// (Slack would show "&am…" as is). Escaped text has no bare "&", so the
// last "&" without its ";" begins a cut entity.
func slackClip(s string, n int) string {
	c := clip(s, n)
	if c == s {
		return s
	}
	c = strings.TrimSuffix(c, "…")
	if i := strings.LastIndexByte(c, '&'); i >= 0 && !strings.Contains(c[i:], ";") {
		c = c[:i]
	}
	return c + "…"
}

// shareLine is the read-only link, as the end of a description.
func shareLine(share string) string {
	if share == "" {
		return ""
	}
	return " Read-only link (no account needed): " + share
}

// causeLine says the top cause in one line, or why there is none.
func causeLine(v wire.Incident) string {
	if v.TopCause == nil {
		return "analysis " + v.AnalysisStatus
	}
	if v.TopCause.Category == "unexplained" { // its score is a shortfall, not a likelihood
		return "no cause stands out: " + v.TopCause.Summary
	}
	return fmt.Sprintf("top cause %s (%.2f): %s", v.TopCause.Category, v.TopCause.Score, v.TopCause.Summary)
}

// publicHost is the host[:port] of the public URL.
func publicHost(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil || u.Host == "" {
		return publicURL
	}
	return u.Host
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
