-- The analysis version a snapshot froze: a version that finishes after
-- the freeze (begun before the resolution, or taken over when stale) has
-- the incident frozen again, and the frozen page says which version it
-- shows. NULL: none, or a snapshot taken before the version was kept.
ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS analysis_version integer;
