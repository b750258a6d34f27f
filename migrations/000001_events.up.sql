-- Change events and alerts on the timeline. id is the idempotency key: the
-- sender's id, or a hash of kind+time+scope+summary.
CREATE TABLE events (
    id          text PRIMARY KEY,
    kind        text NOT NULL,
    time        timestamptz NOT NULL,
    end_time    timestamptz,
    model       text NOT NULL DEFAULT '',
    version     text NOT NULL DEFAULT '',
    tenant      text NOT NULL DEFAULT '',
    replica     text NOT NULL DEFAULT '',
    node        text NOT NULL DEFAULT '',
    source      text NOT NULL DEFAULT '',
    summary     text NOT NULL DEFAULT '',
    attrs       jsonb,
    ingested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_time_idx ON events (time);
CREATE INDEX events_model_time_idx ON events (model, time) WHERE model <> '';
