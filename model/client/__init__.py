"""The push consumer (spec chapters 05-10 and 12): ProcessQueue, offset stores, the pull loop and flow control,
the concurrently and orderly consume services, rebalance. A client step calls the broker half as a synchronous
request (model.broker) and transforms the cluster state that model.system builds."""
