DROP INDEX IF EXISTS events_id_c_idx;
