"""The README's two Quick-start commands are the ones CI runs, verbatim."""

import re

from reports.spec_rules import ROOT


def get_quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_quick_start_has_two_commands():
    commands = get_quick_start_commands()
    assert len(commands) == 2 and "pytest" in commands[1]


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in get_quick_start_commands():
        assert command in ci_lines
