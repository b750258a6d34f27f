-- The home page and the incident page read an incident's spikes by
-- incident_id; most spikes are never attached, so the index skips them.
CREATE INDEX spikes_incident_idx ON spikes (incident_id) WHERE incident_id IS NOT NULL;
