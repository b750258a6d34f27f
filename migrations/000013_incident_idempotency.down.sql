DROP INDEX IF EXISTS incidents_idempotency_key_idx;
ALTER TABLE incidents DROP COLUMN IF EXISTS request_hash, DROP COLUMN IF EXISTS idempotency_key;
