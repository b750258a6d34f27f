package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

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
//
// Every text that reaches the store is made storable (NULs, which
// Postgres text and jsonb refuse, replaced; long texts cut, the event
// marked truncated) rather than refused: Alertmanager never retries a
// 4xx. What cannot be mapped at all (no groupKey, an unknown status, a
// time missing or outside the ingest limits' age and future bounds) is a
// 422 that names the field, and nothing is stored.
//
// Labels map onto a scope as labelScope says; aliases (WATERLINE_CONFIG's
// model_aliases, parsed by the caller) then rename the model.
func Alertmanager(w http.ResponseWriter, req *http.Request, lim Limits, now time.Time, aliases map[string]string) (store.AlertGroup, error) {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return store.AlertGroup{}, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Type",
				Msg: fmt.Sprintf("unsupported Content-Type %q: send application/json", ct)}
		}
	}
	// Alertmanager (and Grafana) never compress the webhook body.
	if ce := req.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return store.AlertGroup{}, &request.Error{Status: http.StatusUnsupportedMediaType, Field: "Content-Encoding",
			Msg: fmt.Sprintf("unsupported Content-Encoding %q: send the notification uncompressed, as Alertmanager does", ce)}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxAlertBody))
	if err != nil {
		var me *http.MaxBytesError
		if errors.As(err, &me) {
			return store.AlertGroup{}, &request.Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("notification larger than %d bytes", maxAlertBody)}
		}
		return store.AlertGroup{}, ReadFailed(err, "reading the notification failed")
	}
	var p wire.AlertmanagerPayload
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return store.AlertGroup{}, request.BadInput("", "empty body: send an Alertmanager webhook payload")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field, te := alertTypeError(raw, te)
			return store.AlertGroup{}, request.Invalid(field, "want %s, got %s", jsonType(te.Type.Kind()), te.Value)
		}
		var pe *time.ParseError
		if errors.As(err, &pe) {
			return store.AlertGroup{}, request.Invalid(badAlertTime(raw), "want an RFC 3339 time, got %q", pe.Value)
		}
		return store.AlertGroup{}, request.BadInput("", "invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return store.AlertGroup{}, request.BadInput("", "text after the notification's JSON object")
	}
	return alertGroup(&p, lim, now, aliases)
}

// badAlertTime names the first alert time in raw that does not parse
// ("alerts[1].startsAt"), which the decoder's error does not say.
func badAlertTime(raw []byte) string {
	var loose struct {
		Alerts []struct {
			StartsAt *string `json:"startsAt"`
			EndsAt   *string `json:"endsAt"`
		} `json:"alerts"`
	}
	if json.Unmarshal(raw, &loose) == nil {
		for i, a := range loose.Alerts {
			for _, f := range []struct {
				name string
				v    *string
			}{{"startsAt", a.StartsAt}, {"endsAt", a.EndsAt}} {
				if f.v == nil {
					continue
				}
				var t time.Time
				if t.UnmarshalText([]byte(*f.v)) != nil {
					return fmt.Sprintf("alerts[%d].%s", i, f.name)
				}
			}
		}
	}
	return "alerts"
}

// alertTypeError names where a value of the wrong type is: the
// decoder's field leaves out which alert ("alerts.labels"), so the
// alerts are decoded one by one to find the first that fails
// ("alerts[1].labels", or "alerts[1]" for one that is no object).
func alertTypeError(raw []byte, te *json.UnmarshalTypeError) (string, *json.UnmarshalTypeError) {
	if te.Field != "alerts" && !strings.HasPrefix(te.Field, "alerts.") {
		return te.Field, te
	}
	var loose struct {
		Alerts []json.RawMessage `json:"alerts"`
	}
	if json.Unmarshal(raw, &loose) != nil {
		return te.Field, te
	}
	for i, a := range loose.Alerts {
		var one wire.AlertmanagerAlert
		var ate *json.UnmarshalTypeError
		if err := json.Unmarshal(a, &one); errors.As(err, &ate) {
			field := fmt.Sprintf("alerts[%d]", i)
			if ate.Field != "" {
				field += "." + ate.Field
			}
			return field, ate
		}
	}
	return te.Field, te
}

// jsonType words a Go kind as the JSON type it decodes from.
func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a number"
}

// Sizes of what a notification keeps. Texts past them are cut, not
// refused: Alertmanager never retries a 4xx, so one 20 KB description
// refused would lose the group's incident, or its resolution. Scope
// labels become dimension values (request.MaxLabelLen): one longer is
// left out of the scope (kept, cut, with the alert's event). Other labels
// and annotations are kept with the alert's event (see boundedStrings).
const (
	maxAlertLabelName  = 256
	maxAlertLabelValue = 4096
	maxAnnotation      = 16 << 10
	maxAlertTitle      = 500 // as POST /api/v1/incidents' title
	maxEventSummary    = 4096
)

// cleanText replaces NULs, which Postgres text and jsonb refuse, with
// U+FFFD and cuts s to max bytes; cut says it was cut.
func cleanText(s string, max int) (_ string, cut bool) {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) > max {
		return truncate(s, max), true
	}
	return s, false
}

// cleanMap is m with every name and value cleaned (see cleanText); of
// two names that clean alike, the first in order is kept.
func cleanMap(m map[string]string, values int) (_ map[string]string, cut bool) {
	if m == nil {
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(m))
	for _, k := range keys {
		ck, c1 := cleanText(k, maxAlertLabelName)
		v, c2 := cleanText(m[k], values)
		cut = cut || c1 || c2
		if _, dup := out[ck]; !dup {
			out[ck] = v
		}
	}
	return out, cut
}

// cleanAlertTexts makes every text of a notification storable, in place:
// NULs replaced, long texts cut. It returns, per alert, whether any of its
// texts was cut. A fingerprint (an identity: cut, two alerts could
// collide) that is too long or holds a NUL is replaced by its hash, the
// same on every retry.
func cleanAlertTexts(p *wire.AlertmanagerPayload) []bool {
	// Any length: storedGroupKey hashes a long one.
	p.GroupKey = strings.ReplaceAll(p.GroupKey, "\x00", "\uFFFD")
	p.Receiver, _ = cleanText(p.Receiver, maxAlertLabelValue)
	p.ExternalURL, _ = cleanText(p.ExternalURL, maxAlertLabelValue)
	p.Version, _ = cleanText(p.Version, maxAlertLabelValue)
	p.GroupLabels, _ = cleanMap(p.GroupLabels, maxAlertLabelValue)
	p.CommonLabels, _ = cleanMap(p.CommonLabels, maxAlertLabelValue)
	p.CommonAnnotations, _ = cleanMap(p.CommonAnnotations, maxAnnotation)
	cut := make([]bool, len(p.Alerts))
	for i := range p.Alerts {
		a := &p.Alerts[i]
		var c1, c2, c3 bool
		a.Labels, c1 = cleanMap(a.Labels, maxAlertLabelValue)
		a.Annotations, c2 = cleanMap(a.Annotations, maxAnnotation)
		a.GeneratorURL, c3 = cleanText(a.GeneratorURL, maxAlertLabelValue)
		if len(a.Fingerprint) > request.MaxLabelLen || strings.IndexByte(a.Fingerprint, 0) >= 0 {
			h := sha256.Sum256([]byte(a.Fingerprint))
			a.Fingerprint = "sha256:" + hex.EncodeToString(h[:])
		}
		cut[i] = c1 || c2 || c3
	}
	return cut
}

// checkAlertTime bounds an alert's time as ingest bounds record times.
func checkAlertTime(t time.Time, lim Limits, now time.Time) string {
	_, msg := checkTime(t.UTC().Format(time.RFC3339Nano), lim, now)
	return msg
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// maxStoredGroupKey is the longest group key stored as sent: it is in two
// btree indexes, whose entries Postgres caps at 2,704 bytes (with the
// fingerprint and start beside it in the receipts' key).
const maxStoredGroupKey = 1024

// storedGroupKey is the key a group is stored under: the key itself, or
// past maxStoredGroupKey its SHA-256 (the same on every retry; the
// event keeps the key as sent).
func storedGroupKey(k string) string {
	if len(k) <= maxStoredGroupKey {
		return k
	}
	h := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(h[:])
}

// alertGroup validates a payload and maps it onto the store's terms: the
// labels become a scope (see labelScope).
func alertGroup(p *wire.AlertmanagerPayload, lim Limits, now time.Time, aliases map[string]string) (store.AlertGroup, error) {
	if p.GroupKey == "" {
		return store.AlertGroup{}, request.Invalid("groupKey", "required")
	}
	cut := cleanAlertTexts(p)
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
	g := store.AlertGroup{GroupKey: storedGroupKey(p.GroupKey), Status: p.Status, Scope: labelScope(common, aliases), Title: alertTitle(p, aliases),
		Truncated: p.TruncatedAlerts > 0}
	for i, a := range p.Alerts {
		field := fmt.Sprintf("alerts[%d]", i)
		if a.Status != store.AlertFiring && a.Status != store.AlertResolved {
			return store.AlertGroup{}, request.Invalid(field+".status", "want firing or resolved, got %q", a.Status)
		}
		if a.StartsAt.IsZero() {
			return store.AlertGroup{}, request.Invalid(field+".startsAt", "required")
		}
		if msg := checkAlertTime(a.StartsAt, lim, now); msg != "" {
			return store.AlertGroup{}, request.Invalid(field+".startsAt", "%s", msg)
		}
		fp := a.Fingerprint
		if fp == "" { // Alertmanager always sends one; hand-written payloads may not
			fp = labelsFingerprint(a.Labels)
		}
		al := store.Alert{Fingerprint: fp, Status: a.Status, StartsAt: a.StartsAt.UTC()}
		if a.Status == store.AlertResolved && !a.EndsAt.IsZero() && !a.EndsAt.Before(a.StartsAt) {
			if msg := checkAlertTime(a.EndsAt, lim, now); msg != "" {
				return store.AlertGroup{}, request.Invalid(field+".endsAt", "%s", msg)
			}
			end := a.EndsAt.UTC()
			al.EndsAt = &end
		}
		al.Event = alertEvent(p.GroupKey, fp, a, al.EndsAt, cut[i])
		al.Event.Scope = labelScope(a.Labels, aliases)
		al.Meta = metaAlert(a.Labels)
		g.Alerts = append(g.Alerts, al)
	}
	return g, nil
}

// metaAlert reports whether an alert is about the alerting pipeline
// itself: kube-prometheus' Watchdog (always firing, to prove the pipeline
// works) and InfoInhibitor, both of severity "none", and the
// DeadMansSwitch of older setups.
func metaAlert(labels map[string]string) bool {
	switch labels["alertname"] {
	case "Watchdog", "InfoInhibitor", "DeadMansSwitch":
		return true
	}
	return labels["severity"] == "none"
}

// alertEvent is an alert on the timeline, with an id that is the same on
// every re-send of the alert.
// cut says the alert's texts were cut on the way in.
func alertEvent(groupKey, fp string, a wire.AlertmanagerAlert, end *time.Time, cut bool) correlate.Event {
	h := sha256.Sum256([]byte(groupKey + "\x00" + fp + "\x00" + a.StartsAt.UTC().Format(time.RFC3339Nano)))
	summary := a.Labels["alertname"]
	if d := a.Annotations["summary"]; d != "" {
		summary += ": " + d
	}
	// Labels and annotations are kept within the budget a pushed event's
	// attrs have (an alert's runbook text can be megabytes, and every
	// page that reads the window's events would carry it).
	budget := maxAlertAttrs
	labels, cutL := boundedStrings(a.Labels, &budget)
	attrs := map[string]any{"labels": labels, "fingerprint": fp, "group_key": truncate(groupKey, maxAlertLabelValue)}
	ann, cutA := boundedStrings(a.Annotations, &budget)
	if len(ann) > 0 {
		attrs["annotations"] = ann
	}
	if cut || cutL || cutA {
		attrs["truncated"] = true
	}
	if a.GeneratorURL != "" {
		attrs["generator_url"] = a.GeneratorURL
	}
	return correlate.Event{
		ID: "alertmanager:" + hex.EncodeToString(h[:16]), Kind: correlate.KindAlert, Time: a.StartsAt.UTC(), EndTime: end,
		Source: "alertmanager", Summary: truncate(summary, maxEventSummary), Attrs: attrs,
	}
}

// maxAlertAttrs bounds the labels and annotations an alert event keeps,
// as /api/v1/events bounds attrs (16 KiB); maxAlertValue one value.
const maxAlertAttrs, maxAlertValue = 16 << 10, 2 << 10

// boundedStrings copies m, in key order, while *budget lasts: each value
// cut to maxAlertValue, keys past the budget left out. It reports whether
// anything was cut or left out.
func boundedStrings(m map[string]string, budget *int) (map[string]string, bool) {
	if len(m) == 0 {
		return m, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(m))
	cut := false
	for _, k := range keys {
		v := truncate(m[k], maxAlertValue)
		cut = cut || len(v) < len(m[k])
		if n := len(k) + len(v); n > *budget {
			cut = true
			continue
		} else {
			*budget -= n
		}
		out[k] = v
	}
	return out, cut
}

// labelScope maps alert labels onto a scope, each dimension from the
// first of its labels that is set, as the pull's presets read them:
// model from model, then vLLM's model_name; replica from exported_pod
// (the pod a metric is about, when Prometheus renamed it because the
// exporter's own pod took the pod label: DCGM, kube-state-metrics), then
// pod; node from node, then DCGM's Hostname. aliases then rename the
// model. A value longer than a dimension value may be
// (request.MaxLabelLen) is left out.
func labelScope(l map[string]string, aliases map[string]string) correlate.Scope {
	v := func(names ...string) string {
		for _, n := range names {
			if s := l[n]; s != "" && len(s) <= request.MaxLabelLen {
				return s
			}
		}
		return ""
	}
	model := v("model", "model_name")
	if to, ok := aliases[model]; ok && model != "" {
		model = to
	}
	return correlate.Scope{Model: model, Version: v("version"), Tenant: v("tenant"), Replica: v("exported_pod", "pod"), Node: v("node", "Hostname")}
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
func alertTitle(p *wire.AlertmanagerPayload, aliases map[string]string) string {
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
	scope := ""
	if sc := labelScope(p.CommonLabels, aliases).String(); sc != "" {
		scope = " (" + sc + ")"
	}
	if len(name)+len(scope) > maxAlertTitle {
		// A long summary is cut, the scope kept when it fits.
		if len(scope) > maxAlertTitle/2 {
			scope = ""
		}
		name = truncate(name, maxAlertTitle-len(scope))
	}
	return name + scope
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
