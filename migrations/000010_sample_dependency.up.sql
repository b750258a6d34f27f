-- The dependency a request's downstream stage called (OTel's peer.service,
-- server.address or db.system), when the sender knows it. A column, not
-- jsonb: the concentration reads it like the other dimensions. Adding a
-- column with a constant default rewrites no partition.
ALTER TABLE samples ADD COLUMN dependency text NOT NULL DEFAULT '';
