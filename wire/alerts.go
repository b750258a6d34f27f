package wire

import "time"

// AlertmanagerPayload is Alertmanager's webhook notification (version 4,
// POST /api/v1/alerts/alertmanager); Grafana sends the same shape with
// extra fields, which are ignored.
type AlertmanagerPayload struct {
	Version           string              `json:"version"`
	GroupKey          string              `json:"groupKey"`
	TruncatedAlerts   int                 `json:"truncatedAlerts,omitempty"`
	Status            string              `json:"status"` // firing or resolved
	Receiver          string              `json:"receiver"`
	GroupLabels       map[string]string   `json:"groupLabels"`
	CommonLabels      map[string]string   `json:"commonLabels"`
	CommonAnnotations map[string]string   `json:"commonAnnotations"`
	ExternalURL       string              `json:"externalURL"`
	Alerts            []AlertmanagerAlert `json:"alerts"`
}

// AlertmanagerAlert is one alert of a notification.
type AlertmanagerAlert struct {
	Status       string            `json:"status"` // firing or resolved
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// AlertResult is the answer to a notification: the incident it opened,
// extended or resolved.
type AlertResult struct {
	IncidentID int64  `json:"incident_id"`
	URL        string `json:"url"`
	Opened     bool   `json:"opened"`
	Extended   bool   `json:"extended"`
	Resolved   bool   `json:"resolved"`
	Alerts     int    `json:"alerts"`
	NewAlerts  int    `json:"new_alerts"`
}
