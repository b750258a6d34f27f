-- Slack (incoming webhooks, or any receiver of Slack's message body) is a
-- webhook format too.
ALTER TABLE webhooks DROP CONSTRAINT IF EXISTS webhooks_format_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_format_check CHECK (format IN ('waterline', 'jira', 'servicenow', 'slack'));
