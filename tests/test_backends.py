"""The backend settings and the pieces of the real backend that need no broker: choosing the backend, finding a
RocketMQ distribution, the loopback-only namespace, broker.conf. The wire format itself is the codec's
(tests/conformance/test_codec.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformance.runner.backends import BackendSettingError, get_backend_name
from conformance.runner.backends.loopback import NotLoopbackOnly, get_namespace_command, is_loopback_only
from conformance.runner.backends.rocketmq import get_binary_distribution, get_distribution, render_broker_conf
from runenv.run_context import SettingError, check_environment


def test_backend_defaults_to_model_and_names_a_bad_value_in_one_line():
    assert get_backend_name({}) == "model"
    assert get_backend_name({"RMQSPEC_BACKEND": "rocketmq-4.9.8"}) == "rocketmq-4.9.8"
    with pytest.raises(BackendSettingError) as error:
        get_backend_name({"RMQSPEC_BACKEND": "kafka"})
    assert str(error.value) == ("RMQSPEC_BACKEND='kafka' is not allowed: expected one of model, rocketmq-4.9.8, "
                                "rocketmq-5.3.3")


def test_a_bad_backend_fails_the_session_start_in_one_line():
    """The suite's start-up check (runenv, called by the root conftest's pytest_configure) names it."""

    check_environment({"RMQSPEC_BACKEND": "rocketmq-5.3.3"})
    with pytest.raises(SettingError) as error:
        check_environment({"RMQSPEC_BACKEND": "rocketmq-5"})
    assert str(error.value) == ("RMQSPEC_BACKEND='rocketmq-5' is not valid: expected one of model, rocketmq-4.9.8, "
                                "rocketmq-5.3.3")


def test_rocketmq_home_is_a_4x_lib_folder(tmp_path):
    lib = tmp_path / "rocketmq-4.9.4" / "lib"
    lib.mkdir(parents=True)
    (lib / "rocketmq-broker-4.9.4.jar").touch()
    for home in (lib, lib.parent):
        distribution = get_distribution({"RMQSPEC_ROCKETMQ_HOME": str(home)})
        assert (distribution.version, distribution.classpath) == ("4.9.4", (f"{lib}/*",))
    with pytest.raises(BackendSettingError, match=r"^RMQSPEC_ROCKETMQ_HOME='.*' is not allowed: expected a Rock"):
        get_binary_distribution(str(tmp_path))


def test_namespace_command_brings_lo_up_then_runs_the_command_unchanged():
    argv = get_namespace_command(["python", "-m", "pytest", "a b"])
    assert argv[1:3] == ["--net", "bash"] and argv[-4:] == ["python", "-m", "pytest", "a b"]
    assert argv[4].startswith("ip link set lo up")


def test_the_real_broker_refuses_to_start_outside_a_loopback_only_namespace(tmp_path):
    from conformance.runner.backends.rocketmq import Distribution, RocketMQ

    broker = RocketMQ(Distribution((), tmp_path, "4.9.8"), tmp_path, {})
    if is_loopback_only():  # already isolated: the guard lets it through, so check the guard's own answer
        pytest.fail("the default test command is expected to run in the host's namespace")
    with pytest.raises(NotLoopbackOnly):
        broker.start()
    assert broker.namesrv is None and broker.broker is None


def test_loopback_launcher_runs_its_command_where_only_lo_exists():
    probe = "import socket; print(sorted(n for _, n in socket.if_nameindex()))"
    result = subprocess.run([sys.executable, "-m", "conformance.runner.backends.loopback", sys.executable, "-c", probe],
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == "['lo']", result.stderr


def test_broker_conf_keeps_loopback_and_lets_the_table_win(tmp_path):
    conf = render_broker_conf(tmp_path, 9876, 10911, {"messageDelayLevel": "1s 1s", "brokerPermission": "4"})
    keys = dict(line.split("=", 1) for line in conf.splitlines())
    assert keys["brokerIP1"] == "127.0.0.1" and keys["namesrvAddr"] == "127.0.0.1:9876"
    assert (keys["messageDelayLevel"], keys["brokerPermission"], keys["listenPort"]) == ("1s 1s", "4", "10911")
    assert keys["storePathRootDir"] == str(tmp_path / "store")


