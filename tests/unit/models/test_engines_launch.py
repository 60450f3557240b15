"""One engine's process (pytest_humanfix/models/engines/launch.py), with small Python programs in
place of an engine: the log it writes, the environment it runs under, waiting until it is
healthy, the error that shows why it is not, and stopping its whole process group."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_humanfix.models.engines import launch
from pytest_humanfix.models.engines.commands import HOST
from pytest_humanfix.models.engines.kinds import LOG_TAIL_CHARS, ServedModel, ServeError
from pytest_humanfix.processes import group_members
from pytest_humanfix.settings import Settings

LLAMACPP = ServedModel("llamacpp", "/m/model.gguf", "/m/model.gguf")
TRANSFORMERS = ServedModel("transformers", "org/model", "org/model")
SHOW_ENV = ("import json, os; print(json.dumps({k: os.environ.get(k) for k in "
            "('OMP_WAIT_POLICY', 'CUDA_VISIBLE_DEVICES', 'HF_HUB_DISABLE_UPDATE_CHECK', "
            "'DEMO_SET')}))")


def engine(tmp_path: Path, *code: str, model: ServedModel = TRANSFORMERS,
           device: str | None = None, port: int | None = None) -> launch.Engine:
    """An engine whose "server" is `python -c code` (or `python *code` for several words), with
    the environment `new_engine` gives its kind."""
    command = [sys.executable, "-c", *code] if len(code) == 1 else [sys.executable, *code]
    defaults = launch.new_engine(model, tmp_path / "unused.log", device,
                                 Settings(model=model.source)).defaults
    return launch.Engine(model, device, port or launch.free_port(), tmp_path / "logs" / "e.log",
                         command, defaults=defaults)


# A controller that starts an engine whose server has a child of its own, as vLLM's server has
# its engine core and workers, says the engine's process group and the child's pid, and waits to
# be killed. Then, by its argument: "stays", nothing more; "exits", the server ends and leaves
# the child, as a crashed vLLM server leaves them; "stopping", the engine is being stopped, its
# processes taking their grace period (they ignore SIGTERM); "forks", the controller has forked a
# child that lives on (whose pid it says too).
CONTROLLER = """
import os, signal, sys, threading, time
from pathlib import Path
from pytest_humanfix.models.engines import launch
from pytest_humanfix.models.engines.kinds import ServedModel
log, then = Path(sys.argv[1]), sys.argv[2]
ignore = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
server = (ignore + "import subprocess, sys, time; child = subprocess.Popen([sys.executable, "
          f"'-c', {ignore + 'import time; time.sleep(120)'!r}]); print(child.pid, flush=True); "
          + ("sys.exit(1)" if then == "exits" else "time.sleep(120)"))
engine = launch.Engine(ServedModel("vllm", "m", "m"), None, launch.free_port(), log,
                       [sys.executable, "-c", server])
engine.start()
deadline = time.monotonic() + 30
while len(log.read_text().splitlines()) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
said = [engine.pid, log.read_text().splitlines()[1]]
if then == "stopping":
    threading.Thread(target=engine.stop).start()
    time.sleep(0.5)
if then == "forks":
    forked = os.fork()
    if forked == 0:
        time.sleep(60)
        os._exit(0)
    said.append(forked)
print(*said, flush=True)
time.sleep(120)
"""


def output_of(started: launch.Engine, lines: int) -> list[str]:
    """The started engine's output once it holds `lines` lines (its log opens with the
    command), or what it holds after 30 s."""
    deadline = time.monotonic() + 30
    while len(started.log_path.read_text().splitlines()) <= lines and time.monotonic() < deadline:
        time.sleep(0.05)
    return started.log_path.read_text().splitlines()[1:]


def running(pid: int) -> bool:
    """Whether `pid` is a process that still runs (a zombie waiting to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_a_free_port_can_be_bound_on_loopback():
    port = launch.free_port()
    with socket.socket() as probe:
        probe.bind((HOST, port))


def test_the_log_tail_is_its_end_or_says_there_is_none(tmp_path):
    log = tmp_path / "server.log"
    assert launch.log_tail(log) == "(no log)"
    log.write_text(" \n\n")
    assert launch.log_tail(log) == "(empty log)"
    log.write_text("x" * 50 + "y" * LOG_TAIL_CHARS)
    assert launch.log_tail(log) == "y" * LOG_TAIL_CHARS
    log.write_bytes(b"bad \xff byte")
    assert launch.log_tail(log) == "bad \ufffd byte"


def test_an_engine_not_started_has_its_url_and_no_pid(tmp_path):
    idle = engine(tmp_path, "pass", port=8123)
    assert idle.base_url == "http://127.0.0.1:8123/v1" and idle.pid is None
    idle.stop()  # nothing to stop


def test_the_log_opens_with_the_command_then_holds_the_engines_output(tmp_path):
    started = engine(tmp_path, "import sys; print('out'); print('err', file=sys.stderr)")
    started.start()
    assert started.process is not None and started.process.wait(30) == 0
    lines = started.log_path.read_text().splitlines()
    assert lines[0].startswith(f"# {sys.executable} -c 'import sys;")
    assert sorted(lines[1:]) == ["err", "out"]


def test_the_engine_runs_under_its_defaults_the_users_environment_and_its_gpu(tmp_path,
                                                                              monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    started = engine(tmp_path, SHOW_ENV, model=LLAMACPP, device="2")
    started.environment = (("DEMO_SET", "engine"),)
    started.start()
    assert started.process is not None and started.process.wait(30) == 0
    seen = json.loads(started.log_path.read_text().splitlines()[1])
    assert seen == {"OMP_WAIT_POLICY": "PASSIVE", "CUDA_VISIBLE_DEVICES": "2",
                    "HF_HUB_DISABLE_UPDATE_CHECK": "1", "DEMO_SET": "engine"}


def test_the_users_own_values_win_over_the_engines_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    monkeypatch.setenv("DEMO_SET", "user")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    started = engine(tmp_path, SHOW_ENV, model=LLAMACPP)  # on the CPU: the GPUs left as they are
    started.environment = (("DEMO_SET", "engine"),)
    started.start()
    assert started.process is not None and started.process.wait(30) == 0
    seen = json.loads(started.log_path.read_text().splitlines()[1])
    assert seen["OMP_WAIT_POLICY"] == "ACTIVE" and seen["DEMO_SET"] == "user"
    assert seen["CUDA_VISIBLE_DEVICES"] == "0,1,2"


def test_a_log_that_cannot_be_written_is_a_serve_error_naming_it(tmp_path):
    (tmp_path / "logs").write_text("a file where the folder should be")
    unwritable = engine(tmp_path, "pass")
    with pytest.raises(ServeError, match=f"cannot write the engine log {unwritable.log_path}: "):
        unwritable.start()
    assert unwritable.process is None


def test_an_engine_that_exits_is_an_error_with_its_status_and_log(tmp_path):
    dying = engine(tmp_path, "import sys; print('CUDA out of memory'); sys.exit(3)")
    dying.start()
    with pytest.raises(ServeError) as raised:
        dying.wait_healthy(60)
    message = str(raised.value)
    # The engine, its model and the start of its command say which of several engines failed.
    assert message.startswith("the transformers engine for 'org/model' (-c 'import sys; ")
    assert f"exited with status 3; its log is {dying.log_path}, ending:\n# " in message
    assert message.endswith("\nCUDA out of memory")


def test_an_engine_never_healthy_is_an_error_after_the_timeout(tmp_path):
    silent = engine(tmp_path, "import time; time.sleep(60)")
    silent.start()
    try:
        with pytest.raises(ServeError, match=r"was not healthy after 0\.3 s; its log is "):
            silent.wait_healthy(0.3)
    finally:
        silent.stop()


def test_an_engine_is_healthy_once_its_health_path_answers_200(tmp_path):
    root = tmp_path / "site"
    (root / "v1").mkdir(parents=True)
    (root / "v1" / "models").write_text("{}")  # llama.cpp's health path, as a file served
    port = launch.free_port()
    served = engine(tmp_path, "-m", "http.server", "--bind", HOST, "--directory", str(root),
                    str(port), model=LLAMACPP, port=port)
    assert not served.healthy()
    served.start()
    try:
        served.wait_healthy(60)
        assert served.healthy()
    finally:
        served.stop()
    assert served.process is not None and served.process.returncode is not None
    assert not served.healthy()


def test_stopping_ends_the_engines_whole_process_group(tmp_path):
    parent = engine(tmp_path, "import subprocess, sys, time; child = subprocess.Popen("
                    "[sys.executable, '-c', 'import time; time.sleep(60)']); "
                    "print(child.pid, flush=True); time.sleep(60)")
    parent.start()
    child = int(output_of(parent, 1)[0])
    assert running(child)
    parent.stop()
    assert parent.process is not None and parent.process.returncode is not None
    deadline = time.monotonic() + 10
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(child)
    parent.stop()  # a second stop finds nothing left to do


def test_stopping_an_engine_whose_process_died_first_ends_its_children(tmp_path, monkeypatch):
    """vLLM's workers that ignore SIGTERM, left by an engine process that died: before, stop
    did nothing once the engine's process had exited, and they kept the GPU and the port."""
    monkeypatch.setattr(launch, "STOP_GRACE", 0.5)
    orphaning = engine(tmp_path, "import signal, subprocess, sys; child = subprocess.Popen("
                       "[sys.executable, '-c', 'import signal, time; "
                       "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                       "print(1, flush=True); time.sleep(60)'], stdout=subprocess.PIPE); "
                       "child.stdout.readline(); print(child.pid, flush=True)")
    orphaning.start()
    with pytest.raises(ServeError, match="exited with status 0"):
        orphaning.wait_healthy(60)  # reaps the engine's process
    child = int(orphaning.log_path.read_text().splitlines()[1])
    assert running(child)
    orphaning.stop()
    assert not running(child)
    assert group_members(orphaning.process.pid) == []


@pytest.mark.parametrize("then", ["stays", "exits", "stopping", "forks"])
def test_killing_the_controller_outright_ends_every_process_of_its_engine(tmp_path, then):
    """Before, the kernel killed the engine's first process alone when the controller died
    (PR_SET_PDEATHSIG): vLLM's engine core and workers lived on, holding 6 GB here, and on a
    GPU the memory the next run's engine needs. So they would, unwatched, during a stop's
    grace period, and while a child forked by the controller held the watchdog's pipe."""
    controller = subprocess.Popen(
        [sys.executable, "-c", CONTROLLER, str(tmp_path / "e.log"), then],
        stdout=subprocess.PIPE, text=True)
    forked = []
    try:
        assert controller.stdout is not None
        group, child, *forked = map(int, controller.stdout.readline().split())
        assert running(child) and child in group_members(group)
    finally:
        controller.kill()
        controller.wait()
    try:
        deadline = time.monotonic() + 10
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group_members(group) == []
        assert all(running(pid) for pid in forked)  # ended the group, not by its own end
    finally:
        for pid in forked:
            os.kill(pid, signal.SIGKILL)


def test_a_stop_reaches_the_engine_politely_and_ends_its_watchdog(tmp_path):
    polite = engine(tmp_path, "import signal, sys, time; signal.signal(signal.SIGTERM, "
                    "lambda *_: (print('stopping', flush=True), sys.exit(0))); "
                    "print('up', flush=True); time.sleep(60)")
    polite.start()
    assert output_of(polite, 1) == ["up"]
    assert polite.watchdog_process is not None and running(polite.watchdog_process.pid)
    polite.stop()
    assert polite.log_path.read_text().splitlines()[1:] == ["up", "stopping"]
    assert polite.process is not None and polite.process.returncode == 0
    assert polite.watchdog_process.returncode is not None and polite.lifeline is None


def test_the_watchdog_ignores_a_stop_once_the_engine_has_started(tmp_path):
    """Before, start returned once the watchdog's process existed, before it ignored SIGTERM:
    a stop soon after (a failed launch, Ctrl-C; CI's run killed a controller 0.5 s into one)
    ended the watchdog too, and a controller killed then left the engine's workers alive."""
    early = engine(tmp_path, "import time; time.sleep(60)")
    early.start()
    try:
        assert early.watchdog_process is not None
        ignored = int(next(line.split()[1] for line in Path(
            f"/proc/{early.watchdog_process.pid}/status").read_text().splitlines()
            if line.startswith("SigIgn:")), 16)
        assert ignored & (1 << (signal.SIGTERM - 1))
    finally:
        early.stop()


def test_an_engine_whose_watchdog_cannot_start_is_stopped_and_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(launch.watchdog, "__file__", str(tmp_path / "no-such-watchdog.py"))
    unwatched = engine(tmp_path, "import time; time.sleep(60)")
    with pytest.raises(ServeError, match="cannot start the transformers engine's watchdog: "
                                         "it exited with status 2"):
        unwatched.start()
    assert unwatched.process is not None and unwatched.process.returncode is not None
    assert group_members(unwatched.process.pid) == []


def test_an_engine_command_that_cannot_start_is_an_error_saying_why(tmp_path):
    missing = launch.Engine(TRANSFORMERS, None, launch.free_port(), tmp_path / "e.log",
                            [str(tmp_path / "no-such-engine"), "--port", "1"])
    with pytest.raises(ServeError) as raised:
        missing.start()
    assert str(raised.value) == (f"cannot start the transformers engine "
                                 f"'{tmp_path / 'no-such-engine'}': No such file or directory")
    assert missing.process is None and missing.watchdog_process is None


def test_launch_stops_an_engine_that_never_becomes_healthy(tmp_path, monkeypatch):
    started: list[launch.Engine] = []

    def new_engine(model, log_path, device, settings, layout=None, workers=1):
        started.append(launch.Engine(model, device, launch.free_port(), log_path,
                                     [sys.executable, "-c", "import time; time.sleep(60)"]))
        return started[0]

    monkeypatch.setattr(launch, "served_model", lambda settings, gpus: TRANSFORMERS)
    monkeypatch.setattr(launch, "new_engine", new_engine)
    with pytest.raises(ServeError, match="was not healthy after 0.3 s"):
        launch.launch(Settings(model="org/model"), tmp_path / "server.log", timeout=0.3)
    assert started[0].process is not None and started[0].process.returncode is not None
    assert (tmp_path / "server.log").read_text().startswith("# ")
