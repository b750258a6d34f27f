ALTER TABLE spikes DROP COLUMN IF EXISTS peak_at_ceiling;
