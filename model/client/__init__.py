"""The push consumer (spec chapters 05-10 and 12): ProcessQueue, offset stores, the pull loop and flow control,
the concurrently and orderly consume services, rebalance. A client step transforms the cluster state
(model/client/cluster.py) and reaches the broker only by exchanging the wire's requests (model/values/wire.py),
which model/system routes: it imports neither model.broker nor model.system."""
