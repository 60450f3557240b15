"""A fleet of OpenAI-compatible servers (--humanfix-base-url given several times): spread per
worker, a failing server taken out of rotation while its tasks go elsewhere, per-server figures
in summary.json. Scripted stdlib servers on loopback stand in for the engines."""

from __future__ import annotations

import json
import sys

import pytest
from openai_stub import StubServer

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models import openai_api as openai_backend
from pytest_humanfix.models.engines import launch
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.settings import Settings

MESSAGES = [{"role": "user", "content": "Fix bugs in f."}]


def fleet_model(*stubs: StubServer) -> OpenAIModel:
    urls = ",".join(stub.base_url for stub in stubs)
    return OpenAIModel("openai:stub-model", "stub-model",
                       GenerationConfig.of(Settings(model="openai:stub-model", base_url=urls)))


def test_each_worker_starts_at_its_own_server(monkeypatch):
    with StubServer() as first, StubServer() as second:
        for worker, server in (("gw0", first), ("gw1", second), ("gw2", first)):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
            assert fleet_model(first, second).generate(MESSAGES, task=None).server == \
                server.base_url
    assert (len(first.posts()), len(second.posts())) == (2, 1)


def test_a_failing_server_is_taken_out_and_the_request_goes_on(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    with StubServer(script=[503] * 10) as failing, StubServer() as healthy:
        model = fleet_model(failing, healthy)
        first = model.generate(MESSAGES, task=None)
        second = model.generate(MESSAGES, task=None)
    assert first.server == second.server == healthy.base_url
    assert len(failing.posts()) == openai_backend.RETRIES + 1  # not asked again once out
    assert model.servers_out == [{
        "base_url": failing.base_url,
        "reason": f"the server at {failing.base_url} answered 503 for model 'stub-model': "
                  "Error code: 503 - scripted 503"}]


def test_a_server_down_at_start_is_out_and_none_left_is_a_load_error(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    dead = StubServer()
    dead.close()
    with StubServer() as healthy:
        model = fleet_model(dead, healthy)
        assert model.generate(MESSAGES, task=None).server == healthy.base_url
    assert [s["base_url"] for s in model.servers_out] == [dead.base_url]
    assert "cannot reach the OpenAI-compatible server" in model.servers_out[0]["reason"]
    with pytest.raises(ModelLoadError, match="cannot reach the OpenAI-compatible server"):
        fleet_model(dead, dead)


def test_the_last_server_left_is_never_taken_out(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    with StubServer(script=[400]) as only:
        model = fleet_model(only)
        with pytest.raises(ModelLoadError, match="answered 400"):
            model.generate(MESSAGES, task=None)
        assert model.generate(MESSAGES, task=None).server == only.base_url
    assert model.servers_out == []


def test_urls_repeated_or_comma_separated(humanfix_pytester):
    config = humanfix_pytester.parseconfig("--humanfix-base-url=http://a:1/v1,http://b:2/v1",
                                           "--humanfix-base-url=http://c:3/v1")
    assert Settings.from_config(config).base_urls == ("http://a:1/v1", "http://b:2/v1",
                                                      "http://c:3/v1")
    humanfix_pytester.makeini("[pytest]\nhumanfix_base_url = http://a:1/v1, http://b:2/v1\n")
    assert Settings.from_config(humanfix_pytester.parseconfig()).base_urls == (
        "http://a:1/v1", "http://b:2/v1")
    result = humanfix_pytester.runpytest("--humanfix-model=canonical",
                                         "--humanfix-base-url=http://a:1/v1,b:2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "has 'b:2', which is not an http(s) URL" in result.stderr.str()


def test_a_run_outlives_a_server_of_its_fleet(humanfix_pytester, read_records):
    # One request at a time per worker, so that the dying server answers exactly one.
    with StubServer(die_after=1) as dying, StubServer() as staying:
        result = humanfix_pytester.runpytest(
            "--humanfix-model", "openai:stub-model", "--humanfix-base-url", dying.base_url,
            "--humanfix-base-url", staying.base_url, "--humanfix-max", "6", "-n", "2",
            "--humanfix-ask-ahead", "0")
    records = read_records()
    assert len(records) == 6 and all(r["outcome"] == "unfixed" for r in records)
    result.assert_outcomes(failed=6)
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert summary["tasks"]["errors"] == 0
    servers = summary["servers"]
    assert servers[dying.base_url]["requests"] == 1
    assert servers[staying.base_url]["requests"] == 5
    assert servers[staying.base_url]["seconds"]["max"] > 0
    assert [s["base_url"] for s in summary["servers_out"]] == [dying.base_url]
    result.stdout.fnmatch_lines([f"server out of rotation: {dying.base_url}: cannot reach *"])


@pytest.mark.slow
def test_two_transformers_serve_engines_share_a_run_and_one_dies(tiny_model, tiny_engine,
                                                                  tmp_path, humanfix_pytester,
                                                                  spawn_pytest, read_records):
    # The first engine is the session's (it stays up); the second is this test's to stop.
    dying = launch.launch(Settings(model=str(tiny_model), engine="transformers"),
                          tmp_path / "server-1.log", timeout=300)
    engines = [tiny_engine, dying]
    try:
        # One request at a time per worker: asking ahead, a worker may have had every reply it
        # needs before the engine dies, and no request would find it gone.
        child = spawn_pytest(
            "-p", "no:cacheprovider", f"--humanfix-model=openai:{engines[0].model.name}",
            f"--humanfix-base-url={engines[0].base_url},{engines[1].base_url}",
            "--humanfix-max=12", "--humanfix-max-new-tokens=16", "-n", "2",
            "--humanfix-ask-ahead=0")
        jsonl = humanfix_pytester.path / "reports" / "humanfix.jsonl"

        def both_workers_done_one() -> bool:
            lines = jsonl.read_text().splitlines() if jsonl.is_file() else []
            return {json.loads(line)["worker"] for line in lines} == {"gw0", "gw1"}

        child.wait_for(both_workers_done_one, "a record from each worker", timeout=300)
        dying.stop()  # mid-run: gw1's next request finds nobody
        assert child.finish(600) == pytest.ExitCode.TESTS_FAILED, child.tail()
    finally:
        dying.stop()
    records = read_records()
    assert len(records) == 12 and all(r["outcome"] != "error" for r in records)
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert summary["tasks"]["errors"] == 0
    requests = {url: row["requests"] for url, row in summary["servers"].items()}
    assert set(requests) == {engines[0].base_url, engines[1].base_url}
    assert min(requests.values()) >= 1
    assert [s["base_url"] for s in summary["servers_out"]] == [engines[1].base_url]
    print("per-server figures:", json.dumps(summary["servers"]), file=sys.stderr)
