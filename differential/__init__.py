"""Broker-side differential: the same request sequences sent over the wire to both backends, compared."""
