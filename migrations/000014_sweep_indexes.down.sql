ALTER TABLE analyses DROP COLUMN IF EXISTS top_cause;
DROP INDEX IF EXISTS incidents_updated_idx;
DROP INDEX IF EXISTS analyses_finished_idx;
DROP INDEX IF EXISTS spikes_ongoing_idx;
