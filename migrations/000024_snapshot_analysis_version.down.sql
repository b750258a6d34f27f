ALTER TABLE snapshots DROP COLUMN IF EXISTS analysis_version;
