"""The system oracle: the Ledger of what a run of the cluster may and must do, shared by properties/ and
conformance/."""
