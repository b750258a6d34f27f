DROP INDEX IF EXISTS spikes_end_idx;
