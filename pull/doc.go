// Package pull is Waterline's intake from Prometheus (or anything that
// speaks its HTTP API: Thanos, Mimir, VictoriaMetrics). Queries by role —
// built-in presets for the exporters people run, composed with the user's
// YAML — become curves (correlate.Curve) in Postgres; kube-state-metrics
// series become change events (deploys, scaling, replica starts and
// restarts, node faults). A cursor per source advances only in the
// transaction that commits the data; history is pulled in chunks within
// Prometheus' 11,000-points-per-series limit; one puller runs across
// several serve replicas, elected through a Postgres advisory lock.
//
// It is the only package that imports client_golang's api.
package pull
