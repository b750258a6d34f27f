-- The day of the newest point written to a series: maintenance deletes
-- series whose points retention has dropped, which pods that come and go
-- with every rollout would otherwise leave behind for ever. A new series
-- has none yet (-infinity); series from before this migration count from
-- now, and are deleted only once they hold no point.
ALTER TABLE series ADD COLUMN IF NOT EXISTS last_point timestamptz NOT NULL DEFAULT now();
ALTER TABLE series ALTER COLUMN last_point SET DEFAULT '-infinity';
CREATE INDEX IF NOT EXISTS series_last_point_idx ON series (last_point);

-- An incident's alert receipts, read by incident (an alert incident's
-- window) and deleted with it (ON DELETE CASCADE scanned the table).
CREATE INDEX IF NOT EXISTS alert_receipts_incident_idx ON alert_receipts (incident_id);
