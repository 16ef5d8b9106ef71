"""A pure functional model of RocketMQ's push-consumer retry machinery (baseline 4.9.8).

Frozen attrs values in, new values and observations out; time and randomness are arguments; no I/O.
"""
