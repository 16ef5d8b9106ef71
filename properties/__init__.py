"""Hypothesis properties and state machines: one machine per spec chapter."""
