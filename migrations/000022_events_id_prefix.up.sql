-- Annotations are found by a prefix of their id (the number their POST
-- answered): under the database's collation the primary key does not
-- serve a prefix, so PATCH, PUT and DELETE scanned the events table. A
-- byte-order ("C") index serves the range [prefix, prefix+1).
CREATE INDEX IF NOT EXISTS events_id_c_idx ON events (id COLLATE "C");
