-- A revoke of an incident's sharing is the incident's: webhooks that had
-- not yet sent a link about it must not make a new one afterwards.
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS share_revoked_at timestamptz;
UPDATE incidents i SET share_revoked_at = l.revoked_at
FROM (SELECT incident_id, max(revoked_at) AS revoked_at FROM share_links WHERE revoked_at IS NOT NULL GROUP BY incident_id) l
WHERE l.incident_id = i.id AND NOT EXISTS (SELECT 1 FROM share_links o WHERE o.incident_id = i.id AND o.webhook_id IS NULL);
