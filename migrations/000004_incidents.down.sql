DROP TABLE snapshots;
DROP TABLE analyses;
DROP TABLE alert_receipts;
DROP TABLE incidents;
