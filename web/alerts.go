package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// amPayload is Alertmanager's webhook payload (version 4; Grafana sends the
// same shape with extra fields, which are ignored).
type amPayload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []amAlert         `json:"alerts"`
}

type amAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// alertResult is the answer to a notification.
type alertResult struct {
	IncidentID int64  `json:"incident_id"`
	URL        string `json:"url"`
	Opened     bool   `json:"opened"`
	Extended   bool   `json:"extended"`
	Resolved   bool   `json:"resolved"`
	Alerts     int    `json:"alerts"`
	NewAlerts  int    `json:"new_alerts"`
}

// maxAlertBody bounds a notification; Alertmanager's are a few KiB per alert.
const maxAlertBody = 8 << 20

// handleAlertmanager is POST /api/v1/alerts/alertmanager. It does its work
// in one short transaction and answers at once: Alertmanager retries on
// 5xx, so the work is idempotent on (groupKey, fingerprint, startsAt).
func (s *Server) handleAlertmanager(c echo.Context) error {
	req := c.Request()
	if ct := req.Header.Get(echo.HeaderContentType); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &inputError{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
				Msg: fmt.Sprintf("unsupported Content-Type %q: send application/json", ct)}
		}
	}
	var p amPayload
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), req.Body, maxAlertBody))
	if err := dec.Decode(&p); err != nil {
		var me *http.MaxBytesError
		if errors.As(err, &me) {
			return &inputError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("notification larger than %d bytes", maxAlertBody)}
		}
		if errors.Is(err, io.EOF) {
			return badInput("", "empty body: send an Alertmanager webhook payload")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalid(te.Field, "want %s, got %s", te.Type, te.Value)
		}
		return badInput("", "invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	g, err := s.alertGroup(&p)
	if err != nil {
		return err
	}
	out, err := s.store.ApplyAlertGroup(req.Context(), g, s.cfg.AlertLookback, s.now())
	if err != nil {
		return err
	}
	s.countIngest("alerts", out.NewAlerts, len(g.Alerts)-out.NewAlerts)
	if out.Changed() {
		s.incidentChanged(out.IncidentID)
	}
	if out.Resolved {
		s.snapshotOnResolve(req.Context(), out.IncidentID) // the permalink outlives retention
	}
	return c.JSON(http.StatusOK, alertResult{
		IncidentID: out.IncidentID, URL: s.incidentURL(out.IncidentID), Opened: out.Opened, Extended: out.Extended,
		Resolved: out.Resolved, Alerts: len(g.Alerts), NewAlerts: out.NewAlerts,
	})
}

// alertGroup validates a payload and maps it onto the store's terms:
// labels model/version/tenant/pod/node become the scope (pod is the replica).
func (s *Server) alertGroup(p *amPayload) (store.AlertGroup, error) {
	if p.GroupKey == "" {
		return store.AlertGroup{}, invalid("groupKey", "required")
	}
	if p.Status != store.AlertFiring && p.Status != store.AlertResolved {
		return store.AlertGroup{}, invalid("status", "want firing or resolved, got %q", p.Status)
	}
	if len(p.Alerts) == 0 {
		return store.AlertGroup{}, invalid("alerts", "no alerts in the notification")
	}
	common := p.CommonLabels
	if common == nil {
		common = commonLabels(p.Alerts)
	}
	g := store.AlertGroup{GroupKey: p.GroupKey, Status: p.Status, Scope: labelScope(common), Title: alertTitle(p)}
	for i, a := range p.Alerts {
		field := fmt.Sprintf("alerts[%d]", i)
		if a.Status != store.AlertFiring && a.Status != store.AlertResolved {
			return store.AlertGroup{}, invalid(field+".status", "want firing or resolved, got %q", a.Status)
		}
		if a.StartsAt.IsZero() {
			return store.AlertGroup{}, invalid(field+".startsAt", "required")
		}
		fp := a.Fingerprint
		if fp == "" { // Alertmanager always sends one; hand-written payloads may not
			fp = labelsFingerprint(a.Labels)
		}
		al := store.Alert{Fingerprint: fp, Status: a.Status, StartsAt: a.StartsAt.UTC()}
		if a.Status == store.AlertResolved && !a.EndsAt.IsZero() && !a.EndsAt.Before(a.StartsAt) {
			end := a.EndsAt.UTC()
			al.EndsAt = &end
		}
		al.Event = alertEvent(p.GroupKey, fp, a, al.EndsAt)
		g.Alerts = append(g.Alerts, al)
	}
	return g, nil
}

// alertEvent is an alert on the timeline, with an id that is the same on
// every re-send of the alert.
func alertEvent(groupKey, fp string, a amAlert, end *time.Time) correlate.Event {
	h := sha256.Sum256([]byte(groupKey + "\x00" + fp + "\x00" + a.StartsAt.UTC().Format(time.RFC3339Nano)))
	summary := a.Labels["alertname"]
	if d := a.Annotations["summary"]; d != "" {
		summary += ": " + d
	}
	attrs := map[string]any{"labels": a.Labels, "fingerprint": fp, "group_key": groupKey}
	if len(a.Annotations) > 0 {
		attrs["annotations"] = a.Annotations
	}
	if a.GeneratorURL != "" {
		attrs["generator_url"] = a.GeneratorURL
	}
	return correlate.Event{
		ID: "alertmanager:" + hex.EncodeToString(h[:16]), Kind: correlate.KindAlert, Time: a.StartsAt.UTC(), EndTime: end,
		Scope: labelScope(a.Labels), Source: "alertmanager", Summary: summary, Attrs: attrs,
	}
}

// labelScope maps alert labels onto a scope.
func labelScope(l map[string]string) correlate.Scope {
	return correlate.Scope{Model: l["model"], Version: l["version"], Tenant: l["tenant"], Replica: l["pod"], Node: l["node"]}
}

// commonLabels is what Alertmanager's commonLabels holds: the labels every
// alert shares with the same value.
func commonLabels(alerts []amAlert) map[string]string {
	out := map[string]string{}
	for k, v := range alerts[0].Labels {
		out[k] = v
	}
	for _, a := range alerts[1:] {
		for k, v := range out {
			if a.Labels[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// alertTitle names an incident after its alert: "HighLatency: p99 above
// 500ms (model=chat-7b)".
func alertTitle(p *amPayload) string {
	name := p.CommonLabels["alertname"]
	if name == "" {
		name = p.GroupLabels["alertname"]
	}
	if name == "" && len(p.Alerts) > 0 {
		name = p.Alerts[0].Labels["alertname"]
	}
	if name == "" {
		name = "Alertmanager alert"
	}
	if d := p.CommonAnnotations["summary"]; d != "" {
		name += ": " + d
	}
	if sc := labelScope(p.CommonLabels).String(); sc != "" {
		name += " (" + sc + ")"
	}
	return name
}

// labelsFingerprint stands in for Alertmanager's fingerprint: a hash of the
// sorted label set.
func labelsFingerprint(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k + "\x00" + l[k] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
