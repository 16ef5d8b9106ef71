"""The 5.x proxy in local mode, between gRPC clients and the broker (spec/16-proxy.md): receive, ack,
changeInvisibleDuration and the forward to the DLQ, as functions of the broker's POP state."""
