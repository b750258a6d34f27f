-- Pull progress per source (one configured query, or the kube-state-metrics
-- events): the cursor only advances in the transaction that commits the data
-- up to it, so a crash never leaves a hole behind the cursor.
CREATE TABLE pull_cursors (
    source        text PRIMARY KEY,   -- query name ("inference/latency_p99@model") or "events/kube-state-metrics"
    cursor_at     timestamptz NOT NULL,
    last_success  timestamptz,
    last_attempt  timestamptz,
    last_error    text NOT NULL DEFAULT '',
    errors_total  bigint NOT NULL DEFAULT 0,
    points_total  bigint NOT NULL DEFAULT 0
);

-- Ranges still to pull. reason 'outage': the live loop could not reach
-- Prometheus for [from_at, to_at) and catches up; 'history': a
-- "waterline pull --from --to" job. done_to is the progress (data before it
-- is committed), so an interrupted job resumes where it stopped.
CREATE TABLE pull_gaps (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source    text NOT NULL,
    reason    text NOT NULL DEFAULT 'outage',
    from_at   timestamptz NOT NULL,
    to_at     timestamptz NOT NULL,
    done_to   timestamptz NOT NULL,
    error     text NOT NULL DEFAULT '',
    opened_at timestamptz NOT NULL DEFAULT now(),
    filled_at timestamptz
);
CREATE INDEX pull_gaps_open_idx ON pull_gaps (source, reason) WHERE filled_at IS NULL;
