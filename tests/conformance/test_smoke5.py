"""The main job's smoke step and the 5.x clients: where RocketMQ 5.3.3 cannot start, each 5.x client is recorded as
not run with the reason (and the step does not fail); each has a smoke workload of its own API."""

from __future__ import annotations

import json

from conformance import smoke


def test_without_the_5x_run_time_each_5x_client_is_listed_with_the_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMQSPEC_REPORTS", "1")
    monkeypatch.setenv("RMQSPEC_REPORTS_DIR", str(tmp_path))
    monkeypatch.setenv("RMQSPEC_RUN_ID", "run-5")
    monkeypatch.setattr(smoke, "get_5x_unavailable_reason", lambda: "RocketMQ 5.3.3's run time is missing: java")
    assert smoke.run_5x_clients() == []
    records = [json.loads(line) for path in (tmp_path / "run-5").glob("conformance-*.jsonl")
               for line in path.read_text().splitlines()]
    assert sorted(r["client"]["name"] for r in records if r["status"] == "unavailable") == sorted(
        c.name for c in smoke.CLIENTS5)
    assert {r["detail"] for r in records} == {"RocketMQ 5.3.3's run time is missing: java"}
    assert capsys.readouterr().out.count("not run: RocketMQ 5.3.3's run time is missing") == 3


def test_each_5x_client_has_a_smoke_workload_of_its_api():
    apis = {client.name: smoke.WORKLOADS5[client.name].api for client in smoke.CLIENTS5}
    assert apis == {"rocketmq-python-client": "simple", "rocketmq-client-nodejs": "push",
                    "rocketmq-client-java": "pop"}
