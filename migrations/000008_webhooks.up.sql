-- Outbound webhooks (ticketing, chat) and their delivery log. A delivery
-- row is the unit of work: senders claim due rows with FOR UPDATE SKIP
-- LOCKED and keep the lock while they send, so two serve replicas never
-- send the same row, and a row that was delivered is never sent again
-- after a restart.
CREATE TABLE webhooks (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url        text NOT NULL,
    secret     text NOT NULL, -- HMAC-SHA256 key; the API never shows it
    format     text NOT NULL CHECK (format IN ('waterline', 'jira', 'servicenow')),
    events     text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id       bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    incident_id      bigint NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    event            text NOT NULL,
    analysis_version integer NOT NULL DEFAULT 0,
    -- Stable per incident + event + version: the same for every receiver
    -- and every retry, so a receiver can drop what it has seen.
    idempotency_key  text NOT NULL,
    body             text NOT NULL, -- the exact bytes sent (and signed)
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_attempt_at  timestamptz,
    last_status      integer,
    last_error       text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (webhook_id, idempotency_key)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (webhook_id, id DESC);
CREATE INDEX webhook_deliveries_incident_idx ON webhook_deliveries (incident_id);
