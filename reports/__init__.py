"""Run reports and the PySpark coverage pipeline."""
