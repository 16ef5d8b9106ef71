"""Keep ``@pytest.mark.xdist_group`` tests on one worker under pytest 9.2 (used by conftest.py).

pytest-xdist (3.8) implements ``--dist loadgroup`` by renaming ``item._nodeid`` to ``<nodeid>@<group>``; pytest 9.2
reads a node's id from ``item._id`` instead, so the rename is lost and grouped tests spread over workers (each
Spark test worker would then start its own JVM). This applies the same rename where pytest reads it; it does
nothing when xdist's own rename took effect or when not distributing by group.
"""

from __future__ import annotations


def keep_groups_together(config, items) -> None:
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9.2: xdist's rename works
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(names))}")
