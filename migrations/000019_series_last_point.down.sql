DROP INDEX IF EXISTS alert_receipts_incident_idx;
DROP INDEX IF EXISTS series_last_point_idx;
ALTER TABLE series DROP COLUMN IF EXISTS last_point;
