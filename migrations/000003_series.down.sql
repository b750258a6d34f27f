DROP TABLE points;
DROP TABLE series;
