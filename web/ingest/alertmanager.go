package ingest

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

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// maxAlertBody bounds a notification; Alertmanager's are a few KiB per alert.
const maxAlertBody = 8 << 20

// Alertmanager decodes a notification (Alertmanager's webhook payload,
// version 4) and maps it onto the store's terms. Unknown fields are
// ignored: Grafana sends the same shape with more.
func Alertmanager(w http.ResponseWriter, req *http.Request) (store.AlertGroup, error) {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return store.AlertGroup{}, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
				Msg: fmt.Sprintf("unsupported Content-Type %q: send application/json", ct)}
		}
	}
	var p wire.AlertmanagerPayload
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxAlertBody))
	if err := dec.Decode(&p); err != nil {
		var me *http.MaxBytesError
		if errors.As(err, &me) {
			return store.AlertGroup{}, &request.Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("notification larger than %d bytes", maxAlertBody)}
		}
		if errors.Is(err, io.EOF) {
			return store.AlertGroup{}, request.BadInput("", "empty body: send an Alertmanager webhook payload")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return store.AlertGroup{}, request.Invalid(te.Field, "want %s, got %s", te.Type, te.Value)
		}
		return store.AlertGroup{}, request.BadInput("", "invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return alertGroup(&p)
}

// alertGroup validates a payload and maps it onto the store's terms:
// labels model/version/tenant/pod/node become the scope (pod is the replica).
func alertGroup(p *wire.AlertmanagerPayload) (store.AlertGroup, error) {
	if p.GroupKey == "" {
		return store.AlertGroup{}, request.Invalid("groupKey", "required")
	}
	if p.Status != store.AlertFiring && p.Status != store.AlertResolved {
		return store.AlertGroup{}, request.Invalid("status", "want firing or resolved, got %q", p.Status)
	}
	if len(p.Alerts) == 0 {
		return store.AlertGroup{}, request.Invalid("alerts", "no alerts in the notification")
	}
	common := p.CommonLabels
	if common == nil {
		common = commonLabels(p.Alerts)
	}
	g := store.AlertGroup{GroupKey: p.GroupKey, Status: p.Status, Scope: labelScope(common), Title: alertTitle(p)}
	for i, a := range p.Alerts {
		field := fmt.Sprintf("alerts[%d]", i)
		if a.Status != store.AlertFiring && a.Status != store.AlertResolved {
			return store.AlertGroup{}, request.Invalid(field+".status", "want firing or resolved, got %q", a.Status)
		}
		if a.StartsAt.IsZero() {
			return store.AlertGroup{}, request.Invalid(field+".startsAt", "required")
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
func alertEvent(groupKey, fp string, a wire.AlertmanagerAlert, end *time.Time) correlate.Event {
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
func commonLabels(alerts []wire.AlertmanagerAlert) map[string]string {
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
func alertTitle(p *wire.AlertmanagerPayload) string {
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
