-- An LLM request's prompt and generated tokens (OTel's gen_ai.usage.*),
-- 0 when the sender does not know them: the slow requests may be the long
-- ones. Columns with a constant default rewrite no partition.
ALTER TABLE samples
    ADD COLUMN IF NOT EXISTS input_tokens integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS output_tokens integer NOT NULL DEFAULT 0;
