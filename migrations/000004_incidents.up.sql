-- Incidents (a window and a scope to explain), their versioned analyses,
-- and the Alertmanager alerts that opened or extended them.
CREATE TABLE incidents (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title       text NOT NULL,
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    source      text NOT NULL DEFAULT 'manual' CHECK (source IN ('manual', 'alertmanager', 'detector')),
    start_at    timestamptz NOT NULL,
    end_at      timestamptz,            -- NULL while open-ended
    resolved_at timestamptz,
    model       text NOT NULL DEFAULT '',
    version     text NOT NULL DEFAULT '',
    tenant      text NOT NULL DEFAULT '',
    replica     text NOT NULL DEFAULT '',
    node        text NOT NULL DEFAULT '',
    group_key   text,                   -- Alertmanager groupKey for alert-opened incidents
    share_token text UNIQUE,            -- read-only capability for one incident
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (end_at IS NULL OR end_at > start_at)
);
CREATE INDEX incidents_start_idx ON incidents (start_at);
CREATE INDEX incidents_status_idx ON incidents (status, id);
CREATE UNIQUE INDEX incidents_open_group_idx ON incidents (group_key) WHERE status = 'open' AND group_key IS NOT NULL;

CREATE TABLE alert_receipts (
    group_key   text NOT NULL,
    fingerprint text NOT NULL,
    starts_at   timestamptz NOT NULL,
    status      text NOT NULL,
    ends_at     timestamptz,
    incident_id bigint NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_key, fingerprint, starts_at)
);

CREATE TABLE analyses (
    incident_id   bigint NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    version       integer NOT NULL,
    status        text NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
    inputs_digest text NOT NULL DEFAULT '',
    result        jsonb,
    error         text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    PRIMARY KEY (incident_id, version)
);

-- A frozen copy of everything an incident page shows, so permalinks stay
-- complete after Prometheus and sample retention drop the data. Payloads are
-- gzip-compressed JSON.
CREATE TABLE snapshots (
    incident_id bigint PRIMARY KEY REFERENCES incidents (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    curves      bytea NOT NULL,
    events      bytea NOT NULL,
    samples     bytea NOT NULL,
    analysis    bytea NOT NULL
);
