"""rocketmq-client-go's build and the harness's parts made for it, without Go: the pinned copies agree with
PINNED.json (a changed file is refused), the build's cache key follows the sources, the compiler and Debian's
packages, a missing package is named; the run waits for a client's late first pull; an adapter that dies before its
stop is an error; a BROADCASTING failure the next instance consumes again is told from one retried in place."""

from __future__ import annotations

import shutil
import sys
import time

from conformance.checker.causes_go import get_instances, is_broadcast_failure_held
from conformance.history.records import Delivery
from conformance.history.workload import MessageSpec, Workload
from conformance.runner import run as run_module
from conformance.runner.clients import golang
from conformance.runner.clients.driver import AdapterConsumer, StartRequest

GO_CLIENT = {"name": "rocketmq-client-go", "version": "2.1.2"}


def test_the_pinned_copies_are_the_tags_files_unchanged():
    assert golang.get_source_problems() == []
    assert golang.PINNED["client"]["tag"] == "v2.1.2" and len(golang.PINNED["client"]["commit"]) == 40
    assert {"LICENSE", "NOTICE", "consumer/push_consumer.go"} <= set(golang.PINNED["client"]["files"])
    assert set(golang.PINNED["consistent"]["files"]) == {"LICENSE", "consistent.go"}


def test_a_changed_pinned_file_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "go"
    shutil.copytree(golang.GO_DIR / "src", copy / "src")
    target = copy / "src" / golang.PINNED["client"]["path"] / "consumer" / "push_consumer.go"
    target.write_text(target.read_text(encoding="utf-8").replace("5 * time.Second", "1 * time.Second"),
                      encoding="utf-8")
    (copy / "src" / golang.PINNED["consistent"]["path"] / "extra.go").write_text("package consistent\n")
    monkeypatch.setattr(golang, "GO_DIR", copy)
    assert sorted(golang.get_source_problems()) == ["client: consumer/push_consumer.go differs from its pinned SHA-256",
                                                    "consistent: extra.go is not pinned"]


def test_the_build_key_follows_the_compiler_and_the_packages():
    packages = {package: "1.0" for package in golang.DEBIAN_PACKAGES}
    key = golang.get_build_key("go version go1.19.8 linux/amd64", packages)
    assert key == golang.get_build_key("go version go1.19.8 linux/amd64", dict(packages))
    assert key != golang.get_build_key("go version go1.22.0 linux/amd64", packages)
    assert key != golang.get_build_key("go version go1.19.8 linux/amd64", {**packages, "golang-go": "2:1.22~1"})


def test_a_missing_debian_package_is_named_with_the_step_that_installs_it(monkeypatch):
    monkeypatch.setattr(golang, "get_package_versions",
                        lambda packages=golang.DEBIAN_PACKAGES: {p: None if "gjson" in p else "1" for p in packages})
    binary, reason = golang.build()
    assert binary is None
    assert "golang-github-tidwall-gjson-dev" in reason and "conformance-go" in reason


def test_the_build_is_gopath_mode_without_the_module_proxy(tmp_path):
    env = golang.get_build_env(tmp_path)
    assert (env["GO111MODULE"], env["GOPROXY"], env["CGO_ENABLED"]) == ("off", "off", "0")
    assert env["GOPATH"].split(":") == [str(golang.GO_DIR), golang.DEBIAN_GOPATH]


class Started:
    def __init__(self, client: dict, started_s: float | None):
        self.client, self.started_s = client, started_s


def test_the_run_waits_for_a_late_first_pull_only_where_the_client_has_one():
    go_wait = run_module.get_start_wait_end_s([Started(GO_CLIENT, 100.0)])
    assert go_wait == 100.0 + (3000 + run_module.SLACK_MS) / 1000.0
    java = {"name": "rocketmq-client-java", "version": "4.9.8"}
    assert run_module.get_start_wait_end_s([Started(java, 100.0)]) == 0.0
    assert run_module.get_start_wait_end_s([Started(GO_CLIENT, None)]) == 0.0
    assert run_module.get_start_wait_end_s([]) == 0.0


EXITING = "import sys; sys.stdin.readline(); print('dying', file=sys.stderr)"


class ExitingAdapter(AdapterConsumer):
    client_name = "exiting"
    ready_timeout_s = 10.0
    reports_early_exit = True

    def get_argv(self) -> list[str]:
        return [sys.executable, "-c", EXITING]


def test_an_adapter_that_exits_before_its_stop_is_an_error(tmp_path):
    consumer = ExitingAdapter(StartRequest("127.0.0.1:1", "G", "T", "i"), lambda message, seen: "CONSUME_SUCCESS",
                              log_dir=str(tmp_path))
    began = time.monotonic()
    try:
        consumer.start()
    except TimeoutError:
        pass
    assert time.monotonic() - began < 8.0
    assert any("exited before it was stopped" in error and "dying" in error for error in consumer.errors)


def delivery(number: int, key: str, status: str, offset: int = 0) -> Delivery:
    message = {"msgId": key, "queueId": 0, "queueOffset": offset, "commitLogOffset": offset, "reconsumeTimes": 0,
               "properties": {"UNIQ_KEY": key}}
    return Delivery(number, 0.0, message, status, 0)


class History:
    def __init__(self, workload: Workload, deliveries: list[Delivery]):
        self.workload, self.deliveries = workload, tuple(deliveries)


BROADCAST = Workload((MessageSpec("m0", "TagA", 0, ("RECONSUME_LATER",)), MessageSpec("m1", "TagB")),
                     model="broadcasting", restart_after=2)


def test_a_broadcast_failure_consumed_again_by_the_next_instance_is_held():
    # Instance 0 fails m0 and accepts m1; instance 1 (numbering from 1 again) gets m0 again.
    run = History(BROADCAST, [delivery(1, "m0", "RECONSUME_LATER"), delivery(2, "m1", "CONSUME_SUCCESS", 1),
                              delivery(1, "m0", "CONSUME_SUCCESS")])
    assert get_instances(run) == [0, 0, 1]
    assert is_broadcast_failure_held(run, "m0") and is_broadcast_failure_held(run, "")
    assert not is_broadcast_failure_held(run, "m1")


def test_a_restart_right_after_the_first_delivery_starts_the_next_instance():
    # Both instances number their first delivery 1: the same message under the same number is the next instance.
    run = History(BROADCAST, [delivery(1, "m0", "RECONSUME_LATER"), delivery(1, "m0", "CONSUME_SUCCESS")])
    assert get_instances(run) == [0, 1]
    assert is_broadcast_failure_held(run, "m0")
    batch = History(BROADCAST, [delivery(1, "m0", "CONSUME_SUCCESS"), delivery(1, "m1", "CONSUME_SUCCESS", 1)])
    assert get_instances(batch) == [0, 0]


def test_a_failure_retried_within_its_own_instance_is_not_held():
    run = History(BROADCAST, [delivery(1, "m0", "RECONSUME_LATER"), delivery(2, "m0", "CONSUME_SUCCESS")])
    assert get_instances(run) == [0, 0]
    assert not is_broadcast_failure_held(run, "m0")
    clustering = History(Workload(BROADCAST.messages, restart_after=2), [
        delivery(1, "m0", "RECONSUME_LATER"), delivery(1, "m0", "CONSUME_SUCCESS")])
    assert not is_broadcast_failure_held(clustering, "m0")
