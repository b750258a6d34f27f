-- A source the pull config no longer holds (presets detected once
-- Prometheus answered, WATERLINE_CONFIG edited) keeps its cursor, to
-- resume if it comes back, but leaves the pull health: it is not pulled.
ALTER TABLE pull_cursors ADD COLUMN IF NOT EXISTS retired_at timestamptz;
