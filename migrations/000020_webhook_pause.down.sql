ALTER TABLE webhooks DROP COLUMN IF EXISTS paused_until;
