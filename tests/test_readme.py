"""The README's two Quick-start commands are the ones CI runs, verbatim."""

import fnmatch
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


def get_layout_folders() -> set[str]:
    """The top-level folders the README's Layout table names (`model/`, not `model/values/`)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    return {path for path in re.findall(r"^\| `([^`/]+)/` \|", section, flags=re.MULTILINE)}


def get_ignored_folder_patterns() -> list[str]:
    """The .gitignore entries that name a folder at any depth (`build/`, `*.egg-info/`), as fnmatch patterns."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [line[:-1] for line in lines if line.endswith("/") and "/" not in line[:-1]]


def test_the_layout_table_names_every_top_level_folder():
    """Every folder of the repository (not a hidden one, not one .gitignore lists) has its row, and every row's
    folder exists."""
    ignored = get_ignored_folder_patterns()
    folders = {path.name for path in ROOT.iterdir() if path.is_dir() and not path.name.startswith(".")
               and not any(fnmatch.fnmatch(path.name, pattern) for pattern in ignored)}
    assert get_layout_folders() == folders
