// Package wire holds the JSON shapes of Waterline's public API
// (/api/v1, DESIGN §4–5): what clients send (samples, events, incidents,
// Alertmanager notifications, webhook registrations) and what the server
// answers (incidents, analyses, spikes, timelines, pull health, webhooks
// and their deliveries). The server, the demo, the simulator and the
// tests all use these types, so a renamed field breaks the build instead
// of drifting; web/openapi_test.go holds openapi.json to them.
//
// Where a correlate type already is the wire shape (an analysis, its
// causes, spikes, curves, events) it is aliased, not copied. The package
// has no I/O and imports only correlate.
package wire
