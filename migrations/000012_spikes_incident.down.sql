DROP INDEX spikes_incident_idx;
