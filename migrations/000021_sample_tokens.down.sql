ALTER TABLE samples DROP COLUMN IF EXISTS input_tokens, DROP COLUMN IF EXISTS output_tokens;
