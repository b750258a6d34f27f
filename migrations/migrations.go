// Package migrations embeds Waterline's SQL migrations (golang-migrate
// format: NNNNNN_name.up.sql / .down.sql). Landed files are never edited; a
// change is a new migration.
package migrations

import "embed"

// FS holds every *.sql migration at its root.
//
//go:embed *.sql
var FS embed.FS
