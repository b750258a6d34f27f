-- Spikes recorded by the background detector as data arrives.
CREATE TABLE spikes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    series_key  text NOT NULL,
    role        text NOT NULL,
    level       text NOT NULL,
    model       text NOT NULL DEFAULT '',
    version     text NOT NULL DEFAULT '',
    replica     text NOT NULL DEFAULT '',
    node        text NOT NULL DEFAULT '',
    onset       timestamptz NOT NULL,
    start_at    timestamptz NOT NULL,
    end_at      timestamptz NOT NULL,
    ongoing     boolean NOT NULL,
    peak_time   timestamptz NOT NULL,
    peak_value  double precision NOT NULL,
    baseline    double precision NOT NULL,
    direction   text NOT NULL,
    detected_at timestamptz NOT NULL,
    score       double precision NOT NULL,
    severity    text NOT NULL,
    incident_id bigint REFERENCES incidents (id) ON DELETE SET NULL,
    UNIQUE (series_key, start_at)
);
CREATE INDEX spikes_onset_idx ON spikes (onset);
