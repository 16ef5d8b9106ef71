"""A model-backed RocketMQ name server and broker on loopback."""
