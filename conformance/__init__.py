"""Wire-level conformance harness: RocketMQ remoting codec, a model-backed name server and broker, client drivers."""
