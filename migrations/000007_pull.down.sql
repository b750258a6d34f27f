DROP TABLE pull_gaps;
DROP TABLE pull_cursors;
