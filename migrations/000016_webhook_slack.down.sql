-- Slack webhooks cannot be kept under the older constraint: they go.
DELETE FROM webhooks WHERE format = 'slack';
ALTER TABLE webhooks DROP CONSTRAINT IF EXISTS webhooks_format_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_format_check CHECK (format IN ('waterline', 'jira', 'servicenow'));
