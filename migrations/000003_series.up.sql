-- Curves pulled from Prometheus: a series is a role at a level and scope;
-- points are partitioned by UTC day like samples.
CREATE TABLE series (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key      text NOT NULL UNIQUE,
    role     text NOT NULL,
    level    text NOT NULL,
    stage    text NOT NULL DEFAULT '',
    model    text NOT NULL DEFAULT '',
    version  text NOT NULL DEFAULT '',
    tenant   text NOT NULL DEFAULT '',
    replica  text NOT NULL DEFAULT '',
    node     text NOT NULL DEFAULT '',
    labels   jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX series_role_level_idx ON series (role, level);
CREATE INDEX series_model_idx ON series (model) WHERE model <> '';

CREATE TABLE points (
    series_id bigint NOT NULL,
    time      timestamptz NOT NULL,
    value     double precision NOT NULL,
    PRIMARY KEY (series_id, time)
) PARTITION BY RANGE (time);
