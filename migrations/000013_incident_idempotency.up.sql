-- POST /api/v1/incidents with an Idempotency-Key: a retry answers the
-- incident the first request opened. request_hash tells a retry from a
-- different request reusing the key.
ALTER TABLE incidents ADD COLUMN idempotency_key text, ADD COLUMN request_hash bytea;
CREATE UNIQUE INDEX incidents_idempotency_key_idx ON incidents (idempotency_key) WHERE idempotency_key IS NOT NULL;
