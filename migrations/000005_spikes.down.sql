DROP TABLE spikes;
