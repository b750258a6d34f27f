-- Pull progress per role: the cursor only advances after the data up to it
-- is committed. Gaps record ranges that failed and still need a re-pull.
CREATE TABLE pull_cursors (
    source        text PRIMARY KEY,   -- role name, or "events:kube-state-metrics"
    cursor_at     timestamptz NOT NULL,
    last_success  timestamptz,
    last_attempt  timestamptz,
    last_error    text NOT NULL DEFAULT '',
    errors_total  bigint NOT NULL DEFAULT 0,
    points_total  bigint NOT NULL DEFAULT 0
);

CREATE TABLE pull_gaps (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source    text NOT NULL,
    from_at   timestamptz NOT NULL,
    to_at     timestamptz NOT NULL,
    error     text NOT NULL DEFAULT '',
    opened_at timestamptz NOT NULL DEFAULT now(),
    filled_at timestamptz
);
CREATE INDEX pull_gaps_open_idx ON pull_gaps (source) WHERE filled_at IS NULL;
