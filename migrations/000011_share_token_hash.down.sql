-- Hashes cannot be turned back into tokens: going down drops every share
-- link (they stop working).
ALTER TABLE webhooks DROP COLUMN include_share_link;
ALTER TABLE incidents ADD COLUMN share_token text UNIQUE;
DROP TABLE share_links;
