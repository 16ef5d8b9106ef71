"""Starts an engine, prints its URL, runs until interrupted (Ctrl-C or SIGTERM), then stops it.

python -m engines standalone     # spark://127.0.0.1:<port>: python -m reports aggregate --master <url>
python -m engines connect        # sc://127.0.0.1:<port>:    python -m reports aggregate --remote <url>
"""

from __future__ import annotations

import argparse
import signal
import sys

from engines import launch

ENGINES = {"standalone": launch.standalone, "connect": launch.connect_server}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m engines", description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", choices=sorted(ENGINES))
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the context manager stops the engine on the way out
    try:
        with ENGINES[args.engine]() as engine:
            print(engine.url, flush=True)
            signal.pause()
    except KeyboardInterrupt:
        pass
    except launch.EngineError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
