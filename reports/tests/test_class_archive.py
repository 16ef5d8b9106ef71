"""The class archive's life cycle in a cache directory: skipped by the first job, written by the second (one writer
at a time), mapped from then on."""

from __future__ import annotations

import os

from reports import class_archive


def test_the_second_job_writes_the_archive_and_later_jobs_map_it(tmp_path):
    environ = {**os.environ, "RMQSPEC_CACHE_DIR": str(tmp_path)}
    archive = class_archive.get_archive_path(tmp_path, environ)
    assert archive is not None and archive.parent == tmp_path
    assert class_archive.get_java_options(environ) == ([], None)
    options, pending = class_archive.get_java_options(environ)
    assert options[0] == f"-XX:ArchiveClassesAtExit={pending}" and pending.is_file()
    assert class_archive.get_java_options(environ) == ([], None)  # a second writer would only repeat the work
    pending.replace(archive)
    assert class_archive.get_java_options(environ)[0][0] == f"-XX:SharedArchiveFile={archive}"
