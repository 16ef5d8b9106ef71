"""The session's life cycle around the JVM it launches (no JVM here: a stand-in gateway)."""

from __future__ import annotations

import types

from reports.session import LOG_CONFIG, configure_local, shut_down_gateway


class StandInGateway:
    def __init__(self, exit_code):
        self.proc = types.SimpleNamespace(poll=lambda: exit_code)
        self.shut_down = 0

    def shutdown(self):
        self.shut_down += 1


def session_of(gateway):
    return types.SimpleNamespace(sparkContext=types.SimpleNamespace(_gateway=gateway))


def test_at_exit_a_running_jvm_has_its_gateway_shut_down_and_an_ended_one_is_left_alone():
    running, ended = StandInGateway(exit_code=None), StandInGateway(exit_code=0)
    shut_down_gateway(session_of(running))
    shut_down_gateway(session_of(ended))
    assert (running.shut_down, ended.shut_down) == (1, 0)


class RecordingBuilder:
    def __init__(self):
        self.options = {}

    def master(self, master):
        return self.config("spark.master", master)

    def config(self, key, value):
        self.options[key] = value
        return self


def test_a_quick_start_driver_takes_its_whole_heap_at_once_and_a_cluster_sized_one_is_left_alone(tmp_path):
    environ = {"RMQSPEC_CACHE_DIR": str(tmp_path)}
    quick, _ = configure_local(RecordingBuilder(), "local[2]", True, "3g", environ=environ)
    assert quick.options["spark.driver.memory"] == "3g"
    assert quick.options["spark.driver.extraJavaOptions"].split().count("-Xms3g") == 1
    long_job, _ = configure_local(RecordingBuilder(), "local[2]", False, "3g", environ=environ)
    assert "spark.driver.memory" not in long_job.options
    assert "-Xms" not in long_job.options["spark.driver.extraJavaOptions"]


def test_the_default_driver_runs_with_the_jvms_own_flags_and_the_tuning_is_opt_in(tmp_path):
    """Without --tuned-jvm: no JIT, GC or heap flags and no class archive, however often the job runs."""
    environ = {"RMQSPEC_CACHE_DIR": str(tmp_path)}
    for _ in range(3):
        default, pending = configure_local(RecordingBuilder(), "local[2]", False, environ=environ)
        assert default.options["spark.driver.extraJavaOptions"].split() == [
            f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
        ]
        assert pending is None and list(tmp_path.iterdir()) == []
    options = []
    for _ in range(2):  # the archive is written from the second tuned job on
        tuned, pending = configure_local(RecordingBuilder(), "local[2]", True, environ=environ, class_archive=True)
        options = tuned.options["spark.driver.extraJavaOptions"].split()
    assert pending is not None and f"-XX:ArchiveClassesAtExit={pending}" in options
    assert {"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"} <= set(options) and "-XX:+UseParallelGC" not in options
    large, _ = configure_local(RecordingBuilder(), "local[2]", False, environ=environ, class_archive=True)
    options = large.options["spark.driver.extraJavaOptions"].split()
    assert "-XX:+UseParallelGC" in options and "-XX:TieredStopAtLevel=1" not in options
