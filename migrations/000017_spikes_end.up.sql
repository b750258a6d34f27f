-- The explorer draws the spikes overlapping its window: those ending
-- after its start (a spike may begin before the window it shows in).
CREATE INDEX IF NOT EXISTS spikes_end_idx ON spikes (end_at);
