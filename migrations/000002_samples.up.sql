-- Request samples, one partition per UTC day (store creates them on demand
-- and ahead of time, and drops old ones for retention). Every stage is a
-- column because the concentration queries scan them. NULL = not reported.
CREATE TABLE samples (
    time          timestamptz NOT NULL,
    request_id    text NOT NULL,
    model         text NOT NULL,
    version       text NOT NULL DEFAULT '',
    tenant        text NOT NULL DEFAULT '',
    replica       text NOT NULL DEFAULT '',
    node          text NOT NULL DEFAULT '',
    entry         text NOT NULL DEFAULT '',
    batch_size    integer NOT NULL DEFAULT 0,
    status        text NOT NULL DEFAULT '',
    total_ms      double precision NOT NULL,
    gateway_ms    double precision,
    auth_ms       double precision,
    route_ms      double precision,
    queue_ms      double precision,
    batch_wait_ms double precision,
    exec_ms       double precision,
    postprocess_ms double precision,
    downstream_ms double precision,
    sample_rate   double precision NOT NULL DEFAULT 1,
    -- A request keeps its time across retries, so (time, request_id) is the
    -- idempotency key and also serves time-range scans.
    PRIMARY KEY (time, request_id)
) PARTITION BY RANGE (time);
