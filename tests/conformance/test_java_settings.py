"""The Java client's setting RMQSPEC_JAVA_CLIENT_CLASSPATH and why the client may be unavailable (no JDK or jars
needed: the client itself runs in the tox env conformance-java)."""

from __future__ import annotations

import pytest

from conformance.runner.clients import java
from runenv.run_context import SettingError

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("value", ["", ":", "/no/such.jar", "/nowhere/*", "{here}", "{here}/*"])
def test_a_bad_classpath_is_one_line_naming_the_variable_the_value_and_what_is_valid(value, tmp_path):
    value = value.format(here=tmp_path)  # an existing folder with no RocketMQ client in it is refused too
    with pytest.raises(SettingError) as raised:
        java.check_classpath(value)
    message = str(raised.value)
    assert message.startswith(f"RMQSPEC_JAVA_CLIENT_CLASSPATH={value!r} is not valid: expected existing jars")
    assert "DefaultMQPushConsumer" in message and "\n" not in message


def make_client_jar(path) -> str:
    import zipfile

    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr(java.CONSUMER_CLASS, b"\xca\xfe\xba\xbe")
    return str(path)


def test_a_classpath_holding_the_push_consumer_is_accepted_as_a_jar_a_folder_or_a_wildcard(tmp_path):
    (tmp_path / "lib").mkdir()
    jar = make_client_jar(tmp_path / "lib" / "rocketmq-client-4.9.7.jar")
    classes = tmp_path / "classes" / java.CONSUMER_CLASS
    classes.parent.mkdir(parents=True)
    classes.write_bytes(b"\xca\xfe\xba\xbe")
    for value in (jar, f"{tmp_path}/lib/*", f"{tmp_path / 'classes'}:{jar}"):
        assert java.check_classpath(value) == value.split(":")
        java.check_environment({java.CLASSPATH_VARIABLE: value})
        assert java.get_classpath({java.CLASSPATH_VARIABLE: value}) == value.split(":")
    java.check_environment({})  # unset: the default, which get_unavailable_reason judges


def test_without_the_debian_jars_the_client_is_unavailable_with_the_installer_named(tmp_path, monkeypatch):
    monkeypatch.setattr(java, "DEBIAN_DIR", str(tmp_path))
    monkeypatch.setattr(java.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(java, "find_client_dir", lambda start: tmp_path)
    reason = java.get_unavailable_reason({})
    assert reason.startswith("Debian's run-time jars of the client are missing (netty-buffer, ")
    assert ".ci/install-rocketmq-runtime" in reason and java.CLASSPATH_VARIABLE in reason
    assert java.get_classpath({}) is None
    for name in java.DEBIAN_JARS:
        (tmp_path / f"{name}.jar").write_bytes(b"")
    assert java.get_unavailable_reason({}) is None
    assert java.get_classpath({})[-1] == f"{tmp_path}/zstd-jni.jar"


def test_without_a_jdk_the_client_is_unavailable_with_the_tool_named(monkeypatch):
    monkeypatch.setattr(java.shutil, "which", lambda tool: None if tool == "javac" else f"/usr/bin/{tool}")
    assert java.get_unavailable_reason({}).startswith("no `javac` on PATH")
