"""The report format, shared by the writers of report files (reports/plugin.py, conformance/report.py) and their
readers (the aggregate in reports/, the DuckDB baseline in benchmarks/): ``lines`` builds the lines, and
``report-line.schema.json`` is the JSON Schema that decides a line's shape. Nothing here needs PySpark."""
