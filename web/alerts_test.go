package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/web"
	"github.com/waterline-dev/waterline/web/webhook"
	"github.com/waterline-dev/waterline/wire"
)

// amNotification builds an Alertmanager webhook v4 payload with n alerts.
func amNotification(status string, n int, startsAt time.Time, endsAt *time.Time) []byte {
	var alerts []wire.AlertmanagerAlert
	for i := 0; i < n; i++ {
		a := wire.AlertmanagerAlert{
			Status: status,
			Labels: map[string]string{"alertname": "InferenceP99High", "model": "chat-7b", "version": "v3",
				"pod": fmt.Sprintf("chat-7b-%d", i), "node": fmt.Sprintf("gpu-%d", i%3), "severity": "page"},
			Annotations:  map[string]string{"summary": "p99 above SLO"},
			StartsAt:     startsAt.Add(time.Duration(i) * time.Second),
			GeneratorURL: "http://prometheus/graph?g0.expr=x",
			Fingerprint:  fmt.Sprintf("%016x", 0xabc000+i),
		}
		if endsAt != nil {
			a.EndsAt = *endsAt
		}
		alerts = append(alerts, a)
	}
	common := map[string]string{"alertname": "InferenceP99High", "model": "chat-7b", "version": "v3", "severity": "page"}
	if n == 1 {
		common = alerts[0].Labels
	}
	b, _ := json.Marshal(wire.AlertmanagerPayload{
		Version: "4", GroupKey: `{}:{alertname="InferenceP99High"}`, Status: status,
		Receiver: "waterline", GroupLabels: map[string]string{"alertname": "InferenceP99High"},
		CommonLabels: common, CommonAnnotations: map[string]string{"summary": "p99 above SLO"},
		ExternalURL: "http://alertmanager:9093", Alerts: alerts,
	})
	return b
}

func (e *apiEnv) alert(body []byte) wire.AlertResult {
	e.t.Helper()
	r := e.post("/api/v1/alerts/alertmanager", "application/json", body)
	if r.status != http.StatusOK {
		e.t.Fatalf("alertmanager: %d %s", r.status, r.body)
	}
	var a wire.AlertResult
	if err := json.Unmarshal(r.body, &a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func TestAlertmanagerLifecycle(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	start := testNow.Add(-20 * time.Minute)
	firing := amNotification("firing", 1, start, nil)

	a := e.alert(firing)
	if !a.Opened || a.IncidentID == 0 || a.NewAlerts != 1 {
		t.Fatalf("first firing: %+v, want a new incident", a)
	}
	inc := e.incident(a.IncidentID)
	if inc.Status != "open" || inc.Source != "alertmanager" || !inc.StartedAt.Equal(start.Add(-30*time.Minute)) || inc.EndedAt != nil {
		t.Fatalf("incident = %+v, want open, from startsAt − 30m, open-ended", inc)
	}
	if inc.Scope.Model != "chat-7b" || inc.Scope.Version != "v3" || inc.Scope.Replica != "chat-7b-0" || inc.Scope.Node != "gpu-0" {
		t.Fatalf("scope = %+v, want the alert's model/version/pod/node", inc.Scope)
	}
	if !strings.Contains(inc.Title, "InferenceP99High") {
		t.Fatalf("title %q", inc.Title)
	}

	// The same notification again (a retry, or the HA peer): nothing new.
	b := e.alert(firing)
	if b.Opened || b.Extended || b.IncidentID != a.IncidentID || b.NewAlerts != 0 {
		t.Fatalf("repeat: %+v, want the same incident unchanged", b)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 1 {
		t.Fatalf("%d incidents, want 1", n)
	}

	// A new alert of the same group that started earlier extends the window.
	earlier := e.alert(amNotification("firing", 2, start.Add(-10*time.Minute), nil))
	if earlier.IncidentID != a.IncidentID || !earlier.Extended || earlier.NewAlerts != 2 {
		t.Fatalf("earlier alert: %+v, want the incident extended", earlier)
	}
	inc = e.incident(a.IncidentID)
	if !inc.StartedAt.Equal(start.Add(-40*time.Minute)) || inc.Scope.Replica != "" {
		t.Fatalf("after extension: %+v, want start 40m before and replica scope dropped (two pods)", inc)
	}

	end := testNow.Add(-5 * time.Minute)
	r := e.alert(amNotification("resolved", 2, start.Add(-10*time.Minute), &end))
	if !r.Resolved || r.IncidentID != a.IncidentID {
		t.Fatalf("resolved: %+v", r)
	}
	inc = e.incident(a.IncidentID)
	if inc.Status != "resolved" || inc.EndedAt == nil || !inc.EndedAt.Equal(end) || inc.ResolvedAt == nil {
		t.Fatalf("after resolve: %+v", inc)
	}
	// Resolved again, and a late retry of the firing one: still one
	// resolved incident.
	e.alert(amNotification("resolved", 2, start.Add(-10*time.Minute), &end))
	e.alert(firing)
	if n := e.count(`SELECT count(*) FROM incidents WHERE status = 'resolved'`); n != 1 {
		t.Fatalf("%d resolved incidents, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 1 {
		t.Fatalf("%d incidents, want 1", n)
	}
	// Each distinct alert is an event of kind alert; the resolved ones end.
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND source = 'alertmanager'`); n != 3 {
		t.Fatalf("%d alert events, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND end_time = $1`, end); n != 2 {
		t.Fatalf("%d alert events with an end time, want 2", n)
	}
	// The analysis hook heard of the opening, extension and resolution.
	if ch := e.incidentChanges(); len(ch) != 3 {
		t.Fatalf("OnIncidentChanged calls %v, want 3", ch)
	}

	// The group fires again later with a new alert: a new incident.
	again := e.alert(amNotification("firing", 1, testNow.Add(-time.Minute), nil))
	if !again.Opened || again.IncidentID == a.IncidentID {
		t.Fatalf("new firing after resolution: %+v, want a new incident", again)
	}
	// Late copies of the first incident's notifications (Alertmanager's
	// retries, an HA peer catching up) go to the incident their alerts
	// were filed under: the open one is neither resolved nor stretched.
	before := e.incident(again.IncidentID)
	lateResolved := e.alert(amNotification("resolved", 2, start.Add(-10*time.Minute), &end))
	lateFiring := e.alert(firing)
	if lateResolved.IncidentID != a.IncidentID || lateResolved.Resolved || lateFiring.IncidentID != a.IncidentID || lateFiring.Extended {
		t.Fatalf("late copies: resolved %+v, firing %+v, want both filed under #%d, unchanged", lateResolved, lateFiring, a.IncidentID)
	}
	after := e.incident(again.IncidentID)
	if after.Status != "open" || after.EndedAt != nil || !after.StartedAt.Equal(before.StartedAt) {
		t.Fatalf("open incident after late copies of an older one: %+v, want still open from %s", after, before.StartedAt)
	}
	// Its own resolution still resolves it.
	end2 := testNow.Add(30 * time.Second)
	if r := e.alert(amNotification("resolved", 1, testNow.Add(-time.Minute), &end2)); !r.Resolved || r.IncidentID != again.IncidentID {
		t.Fatalf("own resolution: %+v, want #%d resolved", r, again.IncidentID)
	}
}

func TestAlertmanagerResolvedFirst(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	// Waterline was down while the group fired: the resolution alone still
	// files the (already resolved) incident, once.
	start, end := testNow.Add(-time.Hour), testNow.Add(-10*time.Minute)
	body := amNotification("resolved", 1, start, &end)
	a := e.alert(body)
	b := e.alert(body)
	if a.IncidentID == 0 || b.IncidentID != a.IncidentID || b.Opened {
		t.Fatalf("first %+v, second %+v", a, b)
	}
	inc := e.incident(a.IncidentID)
	if inc.Status != "resolved" || inc.EndedAt == nil || !inc.EndedAt.Equal(end) {
		t.Fatalf("incident %+v", inc)
	}
}

func TestAlertmanagerTwoHundredAlerts(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	start := testNow.Add(-15 * time.Minute)
	body := amNotification("firing", 200, start, nil)
	a := e.alert(body)
	if !a.Opened || a.Alerts != 200 || a.NewAlerts != 200 {
		t.Fatalf("%+v", a)
	}
	if n := e.count(`SELECT count(*) FROM alert_receipts`); n != 200 {
		t.Fatalf("%d receipts, want 200", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert'`); n != 200 {
		t.Fatalf("%d alert events, want 200", n)
	}
	if b := e.alert(body); b.NewAlerts != 0 || b.IncidentID != a.IncidentID {
		t.Fatalf("repeat %+v", b)
	}
	end := testNow
	if r := e.alert(amNotification("resolved", 200, start, &end)); !r.Resolved {
		t.Fatalf("resolve %+v", r)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 1 {
		t.Fatalf("%d incidents, want 1", n)
	}
}

func TestAlertmanagerBadPayloads(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	cases := []struct {
		name   string
		body   string
		status int
		field  string
	}{
		{"empty", "", 400, ""},
		{"not JSON", "{", 400, ""},
		{"no groupKey", `{"status":"firing","alerts":[{"status":"firing","startsAt":"2026-11-29T11:00:00Z"}]}`, 422, "groupKey"},
		{"bad status", `{"groupKey":"g","status":"burning","alerts":[]}`, 422, "status"},
		{"no alerts", `{"groupKey":"g","status":"firing","alerts":[]}`, 422, "alerts"},
		{"no startsAt", `{"groupKey":"g","status":"firing","alerts":[{"status":"firing","labels":{"a":"b"}}]}`, 422, "alerts[0].startsAt"},
		{"wrong type", `{"groupKey":"g","status":"firing","alerts":"x"}`, 422, "alerts"},
		{"bad startsAt", `{"groupKey":"g","status":"firing","alerts":[{"status":"firing","labels":{"a":"b"},"startsAt":"2026-11-29T11:00:00Z"},{"status":"firing","startsAt":"yesterday"}]}`, 422, "alerts[1].startsAt"},
		{"bad endsAt", `{"groupKey":"g","status":"firing","alerts":[{"status":"firing","startsAt":"2026-11-29T11:00:00Z","endsAt":"soon"}]}`, 422, "alerts[0].endsAt"},
		{"text after", `{"groupKey":"g","status":"firing","alerts":[{"status":"firing","labels":{"a":"b"},"startsAt":"2026-11-29T11:00:00Z"}]} garbage`, 400, ""},
		// A value of the wrong type names its alert, as a bad time does
		// (the decoder's "alerts.labels" left the sender to find which).
		{"label not a string", `{"groupKey":"g","status":"firing","alerts":[{"status":"firing","labels":{"a":"b"},"startsAt":"2026-11-29T11:00:00Z"},{"status":"firing","labels":{"a":1},"startsAt":"2026-11-29T11:00:00Z"}]}`, 422, "alerts[1].labels"},
		{"status not a string", `{"groupKey":"g","status":"firing","alerts":[{"status":true,"startsAt":"2026-11-29T11:00:00Z"}]}`, 422, "alerts[0].status"},
		{"alert not an object", `{"groupKey":"g","status":"firing","alerts":[{"status":"firing","startsAt":"2026-11-29T11:00:00Z"},"x"]}`, 422, "alerts[1]"},
	}
	for _, c := range cases {
		r := e.post("/api/v1/alerts/alertmanager", "application/json", []byte(c.body))
		if r.status != c.status || r.err.Field != c.field {
			t.Errorf("%s: %d field %q (%s), want %d field %q", c.name, r.status, r.err.Field, r.err.Error, c.status, c.field)
		}
	}
	// Alertmanager never compresses its webhook body: a gzip body is not
	// one it sent, and is refused as such rather than as bad JSON.
	r := e.do(request{method: "POST", path: "/api/v1/alerts/alertmanager", token: e.write, ctype: "application/json", encoding: "gzip",
		body: gz(t, []byte(`{"groupKey":"g","status":"firing","alerts":[]}`))})
	if r.status != http.StatusUnsupportedMediaType {
		t.Errorf("gzip body: %d (%s), want 415", r.status, r.err.Error)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 0 {
		t.Fatalf("%d incidents from bad payloads", n)
	}
}

// Stored events are bounded whatever is pushed: an alert's labels and
// annotations are kept within 16 KiB, as a pushed event's attrs are (an
// alert's 4.8 MB of annotations were stored whole, and every read of the
// window's events carried them), and one request's event attrs within
// 4 MiB in total (decoded, they took ten times their bytes), refused
// whole with the line named.
func TestPushedEventsAreBounded(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	var p wire.AlertmanagerPayload
	if err := json.Unmarshal(amNotification("firing", 1, testNow.Add(-10*time.Minute), nil), &p); err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // 4.8 MB of annotations, each under the 16 KiB a value may have
		p.Alerts[0].Annotations[fmt.Sprintf("runbook_%03d", i)] = strings.Repeat("r", 16000)
	}
	body, _ := json.Marshal(p)
	e.alert(body)
	var n, size int
	var truncated bool
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*), coalesce(max(length(attrs::text)), 0), coalesce(bool_or((attrs->>'truncated')::bool), false)
		FROM events WHERE kind = 'alert'`).Scan(&n, &size, &truncated); err != nil {
		t.Fatal(err)
	}
	if n != 1 || size > 20<<10 || !truncated {
		t.Errorf("%d alert events, attrs of %d bytes, truncated %v; want one within ~16 KiB, marked truncated", n, size, truncated)
	}

	var b strings.Builder
	attrs := `{"note":"` + strings.Repeat("a", 15<<10) + `"}`
	for i := range 300 {
		fmt.Fprintf(&b, `{"id":"big-%d","kind":"config_change","time":%q,"model":"m","summary":"x","attrs":%s}`+"\n",
			i, testNow.Add(-time.Hour).Format(time.RFC3339), attrs)
	}
	r := e.post("/api/v1/events", "application/x-ndjson", []byte(b.String()))
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), `"attrs"`) || !strings.Contains(string(r.body), `"line"`) {
		t.Errorf("4.5 MB of attrs in one request: %d %s", r.status, r.body)
	}
	if got := e.count(`SELECT count(*) FROM events WHERE id LIKE 'big-%'`); got != 0 {
		t.Errorf("%d events of the refused request stored", got)
	}
}

// A long group key (group_by over many labels) is keyed by its hash: the
// raw text outgrew Postgres' index entries, and every retry of the
// notification failed with a 500, the group's alerts never landing.
func TestAlertmanagerLongGroupKey(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	start := testNow.Add(-20 * time.Minute)
	// Random text: Postgres compresses a repetitive one under the limit.
	var labels strings.Builder
	for i := 0; labels.Len() < 3500; i++ {
		fmt.Fprintf(&labels, `l%d="%x",`, i, sha256.Sum256([]byte{byte(i), byte(i >> 8)}))
	}
	key := `{}:{` + labels.String() + `}`
	withKey := func(body []byte) []byte {
		var p wire.AlertmanagerPayload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		p.GroupKey = key
		b, _ := json.Marshal(p)
		return b
	}
	a := e.alert(withKey(amNotification("firing", 1, start, nil)))
	if !a.Opened {
		t.Fatalf("firing with a %d-byte group key: %+v", len(key), a)
	}
	if b := e.alert(withKey(amNotification("firing", 1, start, nil))); b.IncidentID != a.IncidentID || b.NewAlerts != 0 {
		t.Fatalf("retry: %+v, want the same incident unchanged", b)
	}
	end := testNow.Add(-5 * time.Minute)
	if r := e.alert(withKey(amNotification("resolved", 1, start, &end))); !r.Resolved || r.IncidentID != a.IncidentID {
		t.Fatalf("resolved: %+v", r)
	}
}

// amGroup builds a one-group notification from explicit alerts, with the
// common labels Alertmanager would compute.
func amGroup(groupKey, status string, alerts ...wire.AlertmanagerAlert) []byte {
	common := map[string]string{}
	for k, v := range alerts[0].Labels {
		common[k] = v
	}
	for _, a := range alerts[1:] {
		for k, v := range common {
			if a.Labels[k] != v {
				delete(common, k)
			}
		}
	}
	b, _ := json.Marshal(wire.AlertmanagerPayload{Version: "4", GroupKey: groupKey, Status: status, Receiver: "waterline",
		GroupLabels: map[string]string{"alertname": alerts[0].Labels["alertname"]}, CommonLabels: common,
		CommonAnnotations: map[string]string{}, ExternalURL: "http://am:9093", Alerts: alerts})
	return b
}

// amAlert is one alert; end nil means firing, with endsAt in the future
// as Alertmanager sends it.
func amAlert(fp, status string, labels map[string]string, start time.Time, end *time.Time) wire.AlertmanagerAlert {
	a := wire.AlertmanagerAlert{Status: status, Labels: labels, Annotations: map[string]string{"summary": "x"}, StartsAt: start, Fingerprint: fp}
	if end != nil {
		a.EndsAt = *end
	} else {
		a.EndsAt = start.Add(24 * time.Hour)
	}
	return a
}

// Alerts that name no model (kube-prometheus' always-firing Watchdog, a
// node's disk) open no incident: a fleet-wide incident with no scope
// that never closes. They are kept as alert events, the timeline's
// context, and answered 200 so Alertmanager does not retry.
func TestAlertmanagerAlertsWithoutModelOpenNoIncident(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	start := testNow.Add(-10 * time.Minute)
	for _, c := range []struct {
		key    string
		labels map[string]string
	}{
		{`{}:{alertname="Watchdog"}`, map[string]string{"alertname": "Watchdog", "severity": "none", "prometheus": "monitoring/k8s"}},
		{`{}:{alertname="NodeFilesystemAlmostOutOfSpace"}`, map[string]string{"alertname": "NodeFilesystemAlmostOutOfSpace",
			"instance": "10.0.0.7:9100", "mountpoint": "/var", "node": "gpu-3", "severity": "warning"}},
	} {
		body := amGroup(c.key, "firing", amAlert("fp-"+c.labels["alertname"], "firing", c.labels, start, nil))
		if r := e.alert(body); r.Opened || r.IncidentID != 0 || r.URL != "" || r.Alerts != 1 || r.NewAlerts != 1 {
			t.Errorf("%s: %+v, want no incident, one new alert", c.labels["alertname"], r)
		}
		if r := e.alert(body); r.IncidentID != 0 || r.NewAlerts != 0 {
			t.Errorf("%s again: %+v, want nothing new", c.labels["alertname"], r)
		}
		end := testNow.Add(-time.Minute)
		if r := e.alert(amGroup(c.key, "resolved", amAlert("fp-"+c.labels["alertname"], "resolved", c.labels, start, &end))); r.IncidentID != 0 || r.Resolved {
			t.Errorf("%s resolved: %+v, want no incident", c.labels["alertname"], r)
		}
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 0 {
		t.Errorf("%d incidents from alerts naming no model", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND end_time IS NOT NULL`); n != 2 {
		t.Errorf("%d ended alert events, want 2", n)
	}
	// A fleet-wide symptom (an SLO burn over every model) names no part of
	// the fleet: it is an incident, fleet-wide, as it always was.
	fleet := map[string]string{"alertname": "InferenceSLOBurn", "severity": "page"}
	if r := e.alert(amGroup(`{}:{alertname="InferenceSLOBurn"}`, "firing", amAlert("fp-slo", "firing", fleet, start, nil))); !r.Opened || r.IncidentID == 0 {
		t.Errorf("a fleet-wide latency alert: %+v, want an incident", r)
	}
}

// A long annotation (a 21 KB description), a NUL or an over-long label
// does not refuse the notification: a 4xx is never retried by
// Alertmanager, so the group's incident never opened, or never resolved.
// Texts are cut (the event says truncated) and NULs replaced.
func TestAlertmanagerOversizedTextsAreCut(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	key := `{}:{alertname="InferenceP99High"}`
	start := testNow.Add(-10 * time.Minute)
	labels := map[string]string{"alertname": "InferenceP99High", "model": "chat", "tenant": strings.Repeat("t", 300),
		"job": "infer\x00ence", "bad\x00name": "x", strings.Repeat("k", 300): "long name"}
	a := amAlert("bb01", "firing", labels, start, nil)
	a.Annotations["description"] = strings.Repeat("pod chat-x p99 1.2s; ", 1000) // ~21 KB
	a.Annotations["summary"] = "p99 \x00 high"
	a.GeneratorURL = "http://prometheus/graph?g0.expr=" + strings.Repeat("x", 10000)
	r := e.post("/api/v1/alerts/alertmanager", "application/json", amGroup(key, "firing", a))
	if r.status != http.StatusOK {
		t.Fatalf("a 21 KB annotation, NULs, long labels: %d %s, want 200", r.status, r.body)
	}
	var res wire.AlertResult
	if err := json.Unmarshal(r.body, &res); err != nil || !res.Opened {
		t.Fatalf("%s: want an incident opened", r.body)
	}
	if inc := e.incident(res.IncidentID); inc.Scope.Model != "chat" || inc.Scope.Tenant != "" {
		t.Errorf("scope %+v: want model chat, the 300-byte tenant left out (no dimension value is that long)", inc.Scope)
	}
	var attrs, summary string
	var truncated bool
	if err := e.pool.QueryRow(t.Context(), `SELECT attrs::text, summary, coalesce((attrs->>'truncated')::bool, false) FROM events WHERE kind = 'alert'`).
		Scan(&attrs, &summary, &truncated); err != nil {
		t.Fatal(err)
	}
	if !truncated || len(attrs) > 20<<10 || strings.Contains(attrs, `\u0000`) || strings.Contains(summary, "\x00") || !strings.Contains(summary, "p99 \ufffd high") {
		t.Errorf("event: truncated %v, %d bytes of attrs, summary %q; want cut, marked truncated, NULs replaced", truncated, len(attrs), summary)
	}
	// Its resolution, as big, resolves it.
	end := testNow.Add(-time.Minute)
	a.Status, a.EndsAt = "resolved", end
	if r := e.alert(amGroup(key, "resolved", a)); !r.Resolved || r.IncidentID != res.IncidentID {
		t.Errorf("resolution: %+v, want #%d resolved", r, res.IncidentID)
	}
}

// An alert and the detector that see the same spike make one incident
// (one page, one analysis), whichever comes first: the detector's spike
// joins the alert's incident, or the alert group adopts the detector's.
// The alert owns the incident's resolution either way.
func TestAlertmanagerAndDetectorShareOneIncident(t *testing.T) {
	t.Parallel()
	t0 := testNow.Add(-6 * time.Hour).Truncate(time.Minute)
	onset, spikeEnd, end := t0.Add(100*time.Minute), t0.Add(115*time.Minute), t0.Add(170*time.Minute)
	key := `{}:{alertname="InferenceP99High"}`
	labels := map[string]string{"alertname": "InferenceP99High", "model": "chat", "severity": "page"}
	fired := onset.Add(2 * time.Minute) // for: 2m
	for _, alertFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("alert first %v", alertFirst), func(t *testing.T) {
			t.Parallel()
			e := newAPIEnv(t)
			ctx := t.Context()
			writeChatSpike(t, e, t0, onset, spikeEnd, end)
			now := spikeEnd.Add(-5 * time.Minute)
			det := diagnose.NewDetector(e.st, diagnose.DetectorOptions{OpenIncidents: true, Merge: 30 * time.Minute,
				Now: func() time.Time { return now }, Incidents: e.incidents})
			firing := amGroup(key, "firing", amAlert("aa01", "firing", labels, fired, nil))
			var id int64
			if alertFirst {
				r := e.alert(firing)
				if !r.Opened {
					t.Fatalf("alert: %+v", r)
				}
				id = r.IncidentID
				if err := det.Once(ctx); err != nil {
					t.Fatal(err)
				}
				if n := e.count(`SELECT count(*) FROM spikes WHERE incident_id = $1`, id); n == 0 {
					t.Errorf("the detector's spike did not join the alert's incident #%d", id)
				}
			} else {
				if err := det.Once(ctx); err != nil {
					t.Fatal(err)
				}
				if err := e.pool.QueryRow(ctx, `SELECT id FROM incidents WHERE source = 'detector'`).Scan(&id); err != nil {
					t.Fatalf("the detector opened no incident: %v", err)
				}
				if r := e.alert(firing); r.Opened || r.IncidentID != id {
					t.Errorf("alert after the detector: %+v, want it filed under the detector's #%d", r, id)
				}
			}
			if n := e.count(`SELECT count(*) FROM incidents`); n != 1 {
				t.Errorf("%d incidents for one spike of chat, want 1", n)
			}
			// The detector, long after the spike ended, leaves the alert's
			// incident open: the alert still fires.
			now = end.Add(time.Hour)
			if err := det.Once(ctx); err != nil {
				t.Fatal(err)
			}
			if inc := e.incident(id); inc.Status != "open" {
				t.Errorf("incident #%d %s while its alert fires", id, inc.Status)
			}
			resolvedAt := end
			if r := e.alert(amGroup(key, "resolved", amAlert("aa01", "resolved", labels, fired, &resolvedAt))); !r.Resolved || r.IncidentID != id {
				t.Errorf("resolution: %+v, want #%d resolved", r, id)
			}
			if n := e.count(`SELECT count(*) FROM incidents`); n != 1 {
				t.Errorf("%d incidents in the end, want 1", n)
			}
		})
	}
}

// Alert labels map onto a scope as the pull's presets do: vLLM's
// model_name is the model, exported_pod the replica (pod being the
// exporter's when Prometheus renamed the target's), DCGM's Hostname the
// node; then WATERLINE_CONFIG's model_aliases rename the model, as for
// pulled curves and OTLP spans. A vLLM alert opened a fleet incident.
func TestAlertmanagerLabelMappingAndModelAliases(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, func(c *web.Config) {
		c.ModelAliases = map[string]string{"meta-llama/Llama-3.1-8B-Instruct": "llama-3-8b"}
	})
	start := testNow.Add(-10 * time.Minute)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   correlate.Scope
	}{
		{"vLLM", map[string]string{"alertname": "VLLMP99High", "model_name": "vision-xl", "pod": "", "severity": "page"},
			correlate.Scope{Model: "vision-xl"}},
		{"aliased, exported_pod, Hostname", map[string]string{"alertname": "GPUStall", "model_name": "meta-llama/Llama-3.1-8B-Instruct",
			"exported_pod": "llama-1", "pod": "dcgm-exporter-x2", "Hostname": "gpu-7"},
			correlate.Scope{Model: "llama-3-8b", Replica: "llama-1", Node: "gpu-7"}},
		{"model wins over model_name", map[string]string{"alertname": "P99", "model": "chat", "model_name": "other", "pod": "chat-1", "node": "n1"},
			correlate.Scope{Model: "chat", Replica: "chat-1", Node: "n1"}},
	} {
		r := e.alert(amGroup(`{}:{alertname="`+c.labels["alertname"]+`"}`, "firing", amAlert("fp-"+c.name, "firing", c.labels, start, nil)))
		if !r.Opened {
			t.Errorf("%s: %+v, want an incident", c.name, r)
			continue
		}
		if inc := e.incident(r.IncidentID); inc.Scope != c.want {
			t.Errorf("%s: incident scope %+v, want %+v", c.name, inc.Scope, c.want)
		}
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND model = 'llama-3-8b' AND replica = 'llama-1' AND node = 'gpu-7'`); n != 1 {
		t.Errorf("%d alert events scoped llama-3-8b/llama-1/gpu-7, want 1", n)
	}
}

// A new incident's window starts at its own alerts: a notification also
// carries alerts filed under an older incident (resolved by hand while
// they still fire), which stretched the new one back to them, days.
func TestAlertmanagerNewIncidentWindowFromItsOwnAlerts(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	key := `{}:{alertname="InferenceP99High"}`
	old := amAlert("cc01", "firing", map[string]string{"alertname": "InferenceP99High", "model": "chat", "pod": "chat-1"}, testNow.Add(-3*24*time.Hour), nil)
	r1 := e.alert(amGroup(key, "firing", old))
	if res := e.do(request{method: "POST", path: fmt.Sprintf("/api/v1/incidents/%d/resolve", r1.IncidentID), token: e.write}); res.status != http.StatusOK {
		t.Fatalf("resolve: %d %s", res.status, res.body)
	}
	newA := amAlert("cc02", "firing", map[string]string{"alertname": "InferenceP99High", "model": "chat", "pod": "chat-2"}, testNow.Add(-2*time.Minute), nil)
	r2 := e.alert(amGroup(key, "firing", old, newA))
	if !r2.Opened || r2.IncidentID == r1.IncidentID {
		t.Fatalf("%+v, want a new incident", r2)
	}
	if inc := e.incident(r2.IncidentID); !inc.StartedAt.Equal(newA.StartsAt.Add(-30 * time.Minute)) {
		t.Errorf("new incident starts %s, %s before its alert; want its startsAt − 30m", inc.StartedAt, newA.StartsAt.Sub(inc.StartedAt))
	}
	// Its resolution ends it at its own alert's end, not the old one's.
	oldEnd, newEnd := testNow.Add(-time.Minute), testNow.Add(-2*time.Minute)
	oldR, newR := old, newA
	oldR.Status, oldR.EndsAt, newR.Status, newR.EndsAt = "resolved", oldEnd, "resolved", newEnd
	if r := e.alert(amGroup(key, "resolved", oldR, newR)); !r.Resolved || r.IncidentID != r2.IncidentID {
		t.Fatalf("resolution: %+v", r)
	}
	if inc := e.incident(r2.IncidentID); inc.EndedAt == nil || !inc.EndedAt.Equal(newEnd) {
		t.Errorf("ended %v, want %s (its own alert's end)", inc.EndedAt, newEnd)
	}
}

// An alert incident's title follows its scope as it widens: it kept the
// first alert's "(model=chat replica=chat-1)" once a second model's alert
// made it fleet-wide.
func TestAlertmanagerTitleFollowsScope(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	key := `{}:{alertname="InferenceP99High"}`
	start := testNow.Add(-10 * time.Minute)
	a := amAlert("gg01", "firing", map[string]string{"alertname": "InferenceP99High", "model": "chat", "pod": "chat-1"}, start, nil)
	b := amAlert("gg02", "firing", map[string]string{"alertname": "InferenceP99High", "model": "chat", "pod": "chat-2"}, start, nil)
	c := amAlert("gg03", "firing", map[string]string{"alertname": "InferenceP99High", "model": "vision", "pod": "vision-1"}, start, nil)
	r := e.alert(amGroup(key, "firing", a))
	for _, step := range []struct {
		alerts []wire.AlertmanagerAlert
		title  string
	}{
		{[]wire.AlertmanagerAlert{a}, "InferenceP99High (model=chat replica=chat-1)"},
		{[]wire.AlertmanagerAlert{a, b}, "InferenceP99High (model=chat)"},
		{[]wire.AlertmanagerAlert{a, b, c}, "InferenceP99High (several models)"},
	} {
		e.alert(amGroup(key, "firing", step.alerts...))
		if inc := e.incident(r.IncidentID); inc.Title != step.title {
			t.Errorf("%d alerts: title %q (scope %+v), want %q", len(step.alerts), inc.Title, inc.Scope, step.title)
		}
	}
}

// Without a resolution (send_resolved: false, or one lost), an alert of
// the group that fires again days later is a new episode, not part of
// the incident still open: a firing notification carries every active
// alert of its group, and none of that incident's, so its alerts have
// ended. It is resolved as a resolved notification resolves one (the
// watchers told, incident.resolved queued, frozen), ending when its
// alerts were last heard firing, and the re-fire opens a new incident.
// It had joined the old one, its window running from days before.
func TestAlertmanagerRefireWithoutResolutionOpensNewIncident(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	ctx := context.Background()
	rc := newHookReceiver(t)
	rc.register(e, "/hook", "waterline")
	notifier := webhook.NewNotifier(e.st, webhook.NotifierOptions{PublicURL: "http://waterline.test"})
	key := `{}:{alertname="InferenceP99High"}`
	l := map[string]string{"alertname": "InferenceP99High", "model": "chat"}
	day1 := testNow.Add(-3 * 24 * time.Hour)
	first := amAlert("dd01", "firing", l, day1, nil)
	r1 := e.alert(amGroup(key, "firing", first))
	// Its last re-send (repeat_interval) came two hours after it started.
	lastHeard := day1.Add(2 * time.Hour)
	if _, err := e.pool.Exec(ctx, `UPDATE alert_receipts SET received_at = $1 WHERE incident_id = $2`, lastHeard, r1.IncidentID); err != nil {
		t.Fatal(err)
	}

	// Same fingerprint, a new startsAt: the alert's next episode.
	refire := amAlert("dd01", "firing", l, testNow.Add(-5*time.Minute), nil)
	r2 := e.alert(amGroup(key, "firing", refire))
	if !r2.Opened || r2.IncidentID == r1.IncidentID {
		t.Fatalf("re-fire: %+v, want a new incident (not #%d)", r2, r1.IncidentID)
	}
	if inc := e.incident(r2.IncidentID); inc.Status != "open" || !inc.StartedAt.Equal(refire.StartsAt.Add(-30*time.Minute)) {
		t.Errorf("new incident %+v, want open from the re-fire's startsAt − 30m", inc)
	}
	old := e.incident(r1.IncidentID)
	if old.Status != "resolved" || old.EndedAt == nil || !old.EndedAt.Equal(lastHeard) || old.ResolvedAt == nil {
		t.Fatalf("old incident %+v, want resolved, ended %s (its alert last heard firing)", old, lastHeard)
	}
	if !slices.Contains(e.incidentChanges(), r1.IncidentID) {
		t.Errorf("watchers told %v, not of #%d's resolution", e.incidentChanges(), r1.IncidentID)
	}
	for _, id := range e.incidentChanges() {
		if err := notifier.NotifyIncident(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.count(`SELECT count(*) FROM webhook_deliveries WHERE incident_id = $1 AND event = 'incident.resolved'`, r1.IncidentID); n != 1 {
		t.Errorf("%d incident.resolved deliveries for #%d, want 1", n, r1.IncidentID)
	}
	for deadline := time.Now().Add(10 * time.Second); e.count(`SELECT count(*) FROM snapshots WHERE incident_id = $1`, r1.IncidentID) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("#%d not frozen", r1.IncidentID)
		}
	}

	// A retry of the re-fire, and a late copy of the first notification,
	// change nothing.
	if r := e.alert(amGroup(key, "firing", refire)); r.IncidentID != r2.IncidentID || r.Opened || r.Extended {
		t.Errorf("retry of the re-fire: %+v, want #%d unchanged", r, r2.IncidentID)
	}
	if r := e.alert(amGroup(key, "firing", first)); r.IncidentID != r1.IncidentID || r.Opened || r.Resolved {
		t.Errorf("late copy of the first notification: %+v, want filed under #%d", r, r1.IncidentID)
	}
	if inc := e.incident(r2.IncidentID); inc.Status != "open" {
		t.Errorf("#%d %s after a late copy of #%d's notification", r2.IncidentID, inc.Status, r1.IncidentID)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 2 {
		t.Errorf("%d incidents, want 2", n)
	}
}

// A truncated notification (truncatedAlerts > 0: max_alerts cut the
// group) may have left the open incident's alerts out, so a re-fire in it
// joins that incident as before.
func TestAlertmanagerTruncatedRefireJoinsOpenIncident(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	key := `{}:{alertname="InferenceP99High"}`
	l := map[string]string{"alertname": "InferenceP99High", "model": "chat"}
	r1 := e.alert(amGroup(key, "firing", amAlert("dd02", "firing", l, testNow.Add(-3*24*time.Hour), nil)))
	var p wire.AlertmanagerPayload
	if err := json.Unmarshal(amGroup(key, "firing", amAlert("dd02", "firing", l, testNow.Add(-5*time.Minute), nil)), &p); err != nil {
		t.Fatal(err)
	}
	p.TruncatedAlerts = 3
	b, _ := json.Marshal(p)
	if r := e.alert(b); r.Opened || r.IncidentID != r1.IncidentID {
		t.Errorf("truncated re-fire: %+v, want it filed under the open #%d", r, r1.IncidentID)
	}
	if inc := e.incident(r1.IncidentID); inc.Status != "open" {
		t.Errorf("#%d %s after a truncated notification", r1.IncidentID, inc.Status)
	}
}

// A group's key changes while its alerts fire (the route or group_by
// edited): the notifications under the new key find the alerts filed
// under the old key's open incident, go to it, and re-key it, so its
// resolution resolves it. The resolution under the new key had opened and
// resolved a second incident, the first one left open for ever.
func TestAlertmanagerGroupKeyChangeKeepsIncident(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	l := map[string]string{"alertname": "InferenceP99High", "model": "chat"}
	start := testNow.Add(-30 * time.Minute)
	oldKey, newKey := `{}:{alertname="InferenceP99High"}`, `{}/{severity="page"}:{alertname="InferenceP99High", model="chat"}`
	a := amAlert("ee01", "firing", l, start, nil)
	r1 := e.alert(amGroup(oldKey, "firing", a))

	// The same alert under the new key: the same incident, now the new
	// key's; nothing new.
	if r := e.alert(amGroup(newKey, "firing", a)); r.IncidentID != r1.IncidentID || r.Opened || r.NewAlerts != 0 {
		t.Fatalf("under the new key: %+v, want #%d, no new alert", r, r1.IncidentID)
	}
	if n := e.count(`SELECT count(*) FROM incidents WHERE id = $1 AND group_key = $2 AND status = 'open'`, r1.IncidentID, newKey); n != 1 {
		t.Fatalf("#%d not re-keyed to the new group key", r1.IncidentID)
	}
	// A second alert under the new key joins it; their resolution resolves it.
	b := amAlert("ee02", "firing", map[string]string{"alertname": "InferenceP99High", "model": "chat", "pod": "chat-2"}, start.Add(time.Minute), nil)
	if r := e.alert(amGroup(newKey, "firing", a, b)); r.IncidentID != r1.IncidentID || r.Opened || r.NewAlerts != 1 {
		t.Fatalf("second alert: %+v, want #%d, one new alert", r, r1.IncidentID)
	}
	end := testNow.Add(-time.Minute)
	ar, br := amAlert("ee01", "resolved", l, start, &end), b
	br.Status, br.EndsAt = "resolved", end
	if r := e.alert(amGroup(newKey, "resolved", ar, br)); !r.Resolved || r.IncidentID != r1.IncidentID || r.Opened {
		t.Fatalf("resolution under the new key: %+v, want #%d resolved", r, r1.IncidentID)
	}
	if inc := e.incident(r1.IncidentID); inc.Status != "resolved" || inc.EndedAt == nil || !inc.EndedAt.Equal(end) {
		t.Errorf("#%d %+v, want resolved, ended %s", r1.IncidentID, inc, end)
	}

	// The key changes between the firing and the resolution.
	l3 := map[string]string{"alertname": "InferenceTTFTHigh", "model": "vision"}
	c := amAlert("ee03", "firing", l3, start, nil)
	r3 := e.alert(amGroup(`{}:{alertname="InferenceTTFTHigh"}`, "firing", c))
	cr := amAlert("ee03", "resolved", l3, start, &end)
	if r := e.alert(amGroup(`{}/{severity="page"}:{alertname="InferenceTTFTHigh", model="vision"}`, "resolved", cr)); !r.Resolved || r.IncidentID != r3.IncidentID || r.Opened {
		t.Fatalf("resolution under a new key: %+v, want #%d resolved", r, r3.IncidentID)
	}
	if n := e.count(`SELECT count(*) FROM incidents`); n != 2 {
		t.Errorf("%d incidents, want 2", n)
	}
	if n := e.count(`SELECT count(*) FROM incidents WHERE status = 'open'`); n != 0 {
		t.Errorf("%d incidents still open", n)
	}
}
