"""The command line's shared parts: the exit codes and a parser whose refusal is one line."""

from __future__ import annotations

import argparse

EXIT_CODES = """exit codes:
  0  every test passed (run) and the aggregate was written
  1  a test failed (run), or with --strict an input line was quarantined (aggregate)
  2  a bad command line, RMQSPEC_* setting or input path (one line says which)
  3  another aggregate held the warehouse for longer than --lock-timeout
  run only: pytest's 2-5 when the suite did not run to its end (interrupted, internal error, a bad RMQSPEC_*
  value or pytest argument, no tests); nothing is aggregated then"""


class OneLineParser(argparse.ArgumentParser):
    """A refused command line is one line (and exit code 2) before anything runs or is written."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
