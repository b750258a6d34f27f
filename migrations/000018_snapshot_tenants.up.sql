-- Every tenant a frozen incident's window held, samples and events: a
-- share link's preview scrubs them from the title, and the frozen samples
-- are thinned (a small tenant's requests may all be left out). NULL for
-- snapshots taken before: their list is unknown.
ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS tenants text[];
