ALTER TABLE samples DROP COLUMN dependency;
