ALTER TABLE pull_cursors DROP COLUMN IF EXISTS retired_at;
