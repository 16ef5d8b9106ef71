"""Spark engines on this machine for the aggregate's cluster paths: a standalone master and worker, and a Spark
Connect server, started from pyspark's own scripts on loopback (engines/launch.py); their tests run in the tox
envs spark-cluster and spark-connect."""
