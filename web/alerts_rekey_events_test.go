package web_test

import (
	"testing"
	"time"
)

// A group's key changes while its alert fires (the route or group_by
// edited): the notifications under the new key re-send the same alert
// (fingerprint, startsAt), which is one alert on the timeline, and its
// resolution under the new key ends that event. The event id was derived
// from the group key too, so the re-send stored a second alert event, and
// the first one, the alert's event since it fired, never ended.
func TestAlertmanagerGroupKeyChangeKeepsOneAlertEvent(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	l := map[string]string{"alertname": "InferenceP99High", "model": "chat"}
	start := testNow.Add(-30 * time.Minute)
	oldKey, newKey := `{}:{alertname="InferenceP99High"}`, `{}/{severity="page"}:{alertname="InferenceP99High", model="chat"}`
	r1 := e.alert(amGroup(oldKey, "firing", amAlert("ff01", "firing", l, start, nil)))
	if r := e.alert(amGroup(newKey, "firing", amAlert("ff01", "firing", l, start, nil))); r.IncidentID != r1.IncidentID || r.NewAlerts != 0 {
		t.Fatalf("under the new key: %+v, want #%d, no new alert", r, r1.IncidentID)
	}
	end := testNow.Add(-time.Minute)
	if r := e.alert(amGroup(newKey, "resolved", amAlert("ff01", "resolved", l, start, &end))); !r.Resolved || r.IncidentID != r1.IncidentID {
		t.Fatalf("resolution under the new key: %+v, want #%d resolved", r, r1.IncidentID)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND attrs->>'fingerprint' = 'ff01'`); n != 1 {
		t.Errorf("%d alert events for one alert, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND attrs->>'fingerprint' = 'ff01' AND end_time IS NULL`); n != 0 {
		t.Errorf("%d events of the resolved alert without an end, want 0", n)
	}
}

// The same for a group that makes no incident (a node's alert: events
// only): under a new key its alert is neither new nor stored twice.
func TestAlertmanagerGroupKeyChangeKeepsOneNodeAlertEvent(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	l := map[string]string{"alertname": "NodeFilesystemAlmostOutOfSpace", "node": "gpu-3", "mountpoint": "/var"}
	start := testNow.Add(-30 * time.Minute)
	e.alert(amGroup(`{}:{alertname="NodeFilesystemAlmostOutOfSpace"}`, "firing", amAlert("ff02", "firing", l, start, nil)))
	newKey := `{}/{severity="warning"}:{alertname="NodeFilesystemAlmostOutOfSpace", node="gpu-3"}`
	if r := e.alert(amGroup(newKey, "firing", amAlert("ff02", "firing", l, start, nil))); r.NewAlerts != 0 || r.IncidentID != 0 {
		t.Errorf("under the new key: %+v, want no incident and no new alert", r)
	}
	end := testNow.Add(-time.Minute)
	e.alert(amGroup(newKey, "resolved", amAlert("ff02", "resolved", l, start, &end)))
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND attrs->>'fingerprint' = 'ff02'`); n != 1 {
		t.Errorf("%d alert events for one alert, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE kind = 'alert' AND attrs->>'fingerprint' = 'ff02' AND end_time = $1`, end); n != 1 {
		t.Errorf("%d events of the resolved alert ending at its endsAt, want 1", n)
	}
}
