-- What the detector and the webhook sweep read on every pass: ongoing
-- spikes (few among many), and the analyses and incidents that changed in
-- the last day.
CREATE INDEX IF NOT EXISTS spikes_ongoing_idx ON spikes (onset) WHERE ongoing;
CREATE INDEX IF NOT EXISTS analyses_finished_idx ON analyses (finished_at) WHERE status = 'ready';
CREATE INDEX IF NOT EXISTS incidents_updated_idx ON incidents (updated_at);
