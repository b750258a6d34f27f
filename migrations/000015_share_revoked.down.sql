ALTER TABLE incidents DROP COLUMN IF EXISTS share_revoked_at;
