-- What the detector and the webhook sweep read on every pass: ongoing
-- spikes (few among many), the analyses and incidents that changed in the
-- last day, and each analysis' top cause (cause.changed compares them;
-- reading it out of every result would detoast thousands of documents).
CREATE INDEX IF NOT EXISTS spikes_ongoing_idx ON spikes (onset) WHERE ongoing;
CREATE INDEX IF NOT EXISTS analyses_finished_idx ON analyses (finished_at) WHERE status = 'ready';
CREATE INDEX IF NOT EXISTS incidents_updated_idx ON incidents (updated_at);
ALTER TABLE analyses ADD COLUMN IF NOT EXISTS top_cause text NOT NULL DEFAULT '';
UPDATE analyses SET top_cause = COALESCE(result->'causes'->0->>'category', '') WHERE status = 'ready';
