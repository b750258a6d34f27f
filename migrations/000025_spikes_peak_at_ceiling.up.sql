-- A recorded spike whose latency quantile was pinned at its histogram's
-- top bucket (correlate.QuantileCeiling): its peak is a lower bound, and
-- the home page and the detector's incident title say "≥". False for
-- spikes recorded before the flag was kept.
ALTER TABLE spikes ADD COLUMN IF NOT EXISTS peak_at_ceiling boolean NOT NULL DEFAULT false;
