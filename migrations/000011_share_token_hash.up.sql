-- Share links are stored as SHA-256 hashes, like API tokens: a database
-- dump or a stray SELECT no longer hands out read access to incidents.
-- One row per holder: the incident's own link (webhook_id NULL; made in
-- the UI or through the API, replaced when a new one is made) and one per
-- webhook that carries links in its deliveries. Existing links keep
-- working: their tokens are hashed in place (they can no longer be shown).
CREATE TABLE share_links (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    incident_id bigint NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    webhook_id  bigint REFERENCES webhooks (id) ON DELETE CASCADE,
    hash        bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE UNIQUE INDEX share_links_holder_idx ON share_links (incident_id, (COALESCE(webhook_id, 0)));

INSERT INTO share_links (incident_id, hash)
SELECT id, sha256(convert_to(share_token, 'UTF8')) FROM incidents WHERE share_token IS NOT NULL;

ALTER TABLE incidents DROP COLUMN share_token;

-- Webhooks may carry a share link, so a ticket reader without an account
-- can open the incident.
ALTER TABLE webhooks ADD COLUMN include_share_link boolean NOT NULL DEFAULT false;
