"""A brought agent (`--humanfix-agent module:callable`, the `humanfix_agent` fixture): the
examples in examples/agents/ run as tests, the built-in repair agent written through the contract
says what the built-in one says, and bad agents get clear outcomes (docs/own-agent.md)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from agent_doubles import CountingSandbox, Replies, fenced
from openai_stub import StubServer

from pytest_humanfix.agent import prompts
from pytest_humanfix.agent.contract import run_agent
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.settings import Settings

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "agents"
COMPARE_AGENTS = REPO / "benchmarks" / "harness" / "compare_agents.py"
MINIMAL = f"{EXAMPLES}/minimal.py:fix"


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_tasks(str(dataset))}


def agent_file(pytester: pytest.Pytester, source: str) -> str:
    """An agent module in the pytester folder, named as --humanfix-agent names it."""
    pytester.makepyfile(agents=textwrap.dedent(source))
    return "agents.py:agent"


def record_of(records: dict[str, dict], task_id: str = "Python/0") -> dict:
    return records[task_id]


def test_a_brought_agent_runs_under_xdist_and_two_agents_compare_with_the_gate(
        humanfix_pytester, records_by_task):
    # The canonical control through the minimal example, under xdist, gated.
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-max", "4", "--humanfix-agent", MINIMAL,
        "-n", "2", "--humanfix-fail-under", "1.0")
    result.assert_outcomes(passed=4)
    assert any(line.startswith("humanfix gates held:") for line in result.outlines)
    records = records_by_task()
    for record in records.values():
        # The example lies outside the pytester rootdir: its absolute file, and its source.
        assert record["protocol"]["agent"].startswith(MINIMAL + "@")
        assert record["outcome"] == "fixed"
        [attempt] = record["attempts"]
        assert (attempt["prompt"], attempt["engine"], attempt["status"], attempt["tests"]) == \
            ("chat", "control", "passed", "test")
        assert attempt["reply"].startswith("Here is the fixed function:")
    assert {r["worker"] for r in records.values()} <= {"gw0", "gw1"}
    reports = humanfix_pytester.path / "reports"
    summary = json.loads((reports / "summary.json").read_text())
    assert summary["pass_at_1"]["value"] == 1.0
    assert (reports / "junit.xml").read_text().count("<testcase ") == 4
    baseline = humanfix_pytester.path / "minimal.jsonl"
    (reports / "humanfix.jsonl").rename(baseline)
    # The built-in agent on the buggy control against it: another agent and model, the same
    # protocol otherwise, so the gate compares them task by task.
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "buggy", "--humanfix-max", "4", "--humanfix-agent", "repair",
        f"--humanfix-baseline={baseline}", "--humanfix-max-regressions", "0")
    assert result.ret == 1
    assert any(line.startswith("humanfix gate FAILED:") and "4 regression(s) against the "
               "baseline, --humanfix-max-regressions 0" in line for line in result.outlines), \
        result.outlines[-10:]


def test_a_conftest_fixture_is_the_agent_and_its_records_resume(humanfix_pytester,
                                                              records_by_task):
    humanfix_pytester.makeconftest("""
        import pytest

        def give_back_the_fix(ctx):
            reply = ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
            return reply.split("```python\\n")[1].split("```")[0]

        @pytest.fixture
        def humanfix_agent():
            return give_back_the_fix
    """)
    args = ("--humanfix-model", "canonical", "--humanfix-task", "Python/0,Python/3")
    humanfix_pytester.runpytest(*args).assert_outcomes(passed=2)
    records = records_by_task()
    fixed = record_of(records)
    conftest = humanfix_pytester.path / "conftest.py"
    source = hashlib.sha256(conftest.read_bytes()).hexdigest()[:12]
    assert fixed["protocol"]["agent"] == f"conftest.py::humanfix_agent@{source}"
    # It never ran the tests: its one reply is graded, as the built-in agent's last one is.
    assert [a["status"] for a in fixed["attempts"]] == ["graded"]
    assert fixed["final_attempt"] == 0 and fixed["fixed_round"] == 0
    result = humanfix_pytester.runpytest(*args, "--humanfix-resume")
    result.assert_outcomes(passed=2)
    assert len(humanfix_pytester.path.joinpath("reports", "humanfix.jsonl")
               .read_text().splitlines()) == 2  # nothing run again
    # An edited fixture is another agent: its run does not resume into the records above.
    conftest.write_text(conftest.read_text().replace("return give_back_the_fix",
                                                     "return give_back_the_fix  # edited"))
    result = humanfix_pytester.runpytest(*args, "--humanfix-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"agent: 'conftest.py::humanfix_agent@{source}' there, " \
        "'conftest.py::humanfix_agent@" in "\n".join(result.errlines)


def test_every_record_of_an_xdist_run_carries_the_controllers_identity(humanfix_pytester,
                                                                       read_records):
    """The agent's file is edited after the controller found the agent and before the workers
    start (xdist's hook before each worker): each worker hashes the edited file, and writes
    under the identity the controller fixed, the one the run's protocol was checked under."""
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            return ctx.task.buggy_code
    """)
    agents = humanfix_pytester.path / "agents.py"
    controllers = hashlib.sha256(agents.read_bytes()).hexdigest()[:12]
    humanfix_pytester.makeconftest("""
        from pathlib import Path

        def pytest_configure_node(node):
            agents = Path(__file__).parent / "agents.py"
            agents.write_text(agents.read_text() + "# edited before " + node.gateway.id + "\\n")
    """)
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-agent", agent,
                                         "--humanfix-max", "4", "-n", "2")
    result.assert_outcomes(failed=4)
    # Each worker started after an edit, and hashed another file than the controller did.
    assert "# edited before gw0" in agents.read_text()
    assert "# edited before gw1" in agents.read_text()
    records = read_records()
    assert {r["worker"] for r in records} <= {"gw0", "gw1"}
    assert [r["protocol"]["agent"] for r in records] == [f"agents.py:agent@{controllers}"] * 4


@pytest.fixture
def replies_file(humanfix_pytester, tasks) -> Path:
    """Python/0: a wrong fix, the same twice again (asked again, hotter, then the round spent
    on it), a reply without code, the fix; Python/2: its buggy code, every time."""
    replies = Replies(tasks["Python/0"])
    rows = [*[("Python/0", reply) for reply in (
                replies.wrong[0], replies.wrong_again, replies.wrong_again, replies.no_code,
                replies.fixed)],
            *[("Python/2", fenced(tasks["Python/2"].buggy_code))] * 8]
    path = humanfix_pytester.path / "replies.jsonl"
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n"
                            for t, c in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("iters", ["0", "3"])
def test_the_repair_example_says_what_the_built_in_agent_says(humanfix_pytester, replies_file,
                                                            iters):
    runs = {}
    for name, agent in (("builtin", "repair"), ("contract", f"{EXAMPLES}/repair.py:repair")):
        report_dir = humanfix_pytester.path / name
        humanfix_pytester.runpytest(
            f"--humanfix-model=replay:{replies_file}", "--humanfix-task", "Python/0,Python/2",
            "--humanfix-iters", iters, "--humanfix-agent", agent,
            f"--humanfix-report-dir={report_dir}")
        runs[name] = report_dir / "humanfix.jsonl"
    compared = subprocess.run(
        [sys.executable, str(COMPARE_AGENTS), *map(str, runs.values())],
        capture_output=True, text=True)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    fixed = 1 if iters == "3" else 0
    assert compared.stdout.strip().endswith(f"fixed {fixed} and {fixed}; 0 tasks differ")
    records = [json.loads(line) for line in runs["contract"].read_text().splitlines()]
    if iters == "3":
        # Round 1 asked again once, hotter; round 2's reply held no code (not run); round 3
        # fixed it.
        python0 = records[0]["attempts"]
        assert [(a["round"], a["temperature"], a["status"]) for a in python0] == [
            (0, 0.0, "failed"), (1, 1.0, ""), (1, 1.2, "repeat"), (2, 1.0, "rejected"),
            (3, 1.0, "passed")]


def test_the_compare_script_tells_a_different_agent(humanfix_pytester, replies_file):
    paths = []
    for agent in ("repair", MINIMAL):
        report_dir = humanfix_pytester.path / agent.rsplit(":", 1)[-1]
        humanfix_pytester.runpytest(
            f"--humanfix-model=replay:{replies_file}", "--humanfix-task", "Python/0",
            "--humanfix-iters", "3", "--humanfix-agent", agent,
            f"--humanfix-report-dir={report_dir}")
        paths.append(str(report_dir / "humanfix.jsonl"))
    compared = subprocess.run([sys.executable, str(COMPARE_AGENTS), *paths],
                              capture_output=True, text=True)
    assert compared.returncode == 1
    assert compared.stdout.startswith("Python/0: replies differ")


def test_a_langgraph_graph_is_an_agent(humanfix_pytester, records_by_task):
    result = humanfix_pytester.runpytest(
        "--humanfix-model", "buggy", "--humanfix-task", "Python/0", "--humanfix-iters", "2",
        "--humanfix-agent", f"{EXAMPLES}/reflection_graph.py:graph")
    result.assert_outcomes(failed=1)
    record = record_of(records_by_task())
    assert record["outcome"] == "unfixed"
    # Hotter each round; each draft run on the tests and told what failed.
    assert [(a["round"], a["temperature"], a["status"]) for a in record["attempts"]] == \
        [(0, 0.0, "failed"), (1, 0.3, "repeat"), (2, 0.6, "repeat")]
    assert "assert has_close_elements(" in record["attempts"][0]["feedback"]
    fixed = humanfix_pytester.runpytest(
        "--humanfix-model", "canonical", "--humanfix-task", "Python/0",
        "--humanfix-agent", f"{EXAMPLES}/reflection_graph.py:graph")
    fixed.assert_outcomes(passed=1)


def test_the_openai_keys_agent_rotates_its_keys_and_sets_refused_ones_aside(
        humanfix_pytester, tasks, records_by_task, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "refused,limited,good")
    with StubServer(reply=fenced(tasks["Python/0"].canonical_code),
                    keys={"refused": [401] * 9, "limited": [429]}) as stub:
        result = humanfix_pytester.runpytest(
            "--humanfix-model", "openai:stub", f"--humanfix-base-url={stub.base_url}",
            "--humanfix-task", "Python/0,Python/1", "--humanfix-agent",
            f"{EXAMPLES}/openai_keys.py:fix")
        keys = [auth.removeprefix("Bearer ") for auth in stub.auth]
    # Python/0: refused (401) and limited (429) are set aside, good answers; Python/1: only
    # good is left while the other two wait out their time.
    assert keys == ["refused", "limited", "good", "good"]
    result.assert_outcomes(passed=1, failed=1)
    records = records_by_task()
    attempt = record_of(records)["attempts"][0]
    assert (attempt["engine"], attempt["prompt_tokens"], attempt["completion_tokens"]) == \
        ("openai-keys", 11, 7)
    assert record_of(records)["tokens"] == {"prompt": 11, "completion": 7}


def test_the_key_ring_brings_a_set_aside_key_back_after_its_time():
    sys.path.insert(0, str(EXAMPLES))
    try:
        from openai_keys import KeyRing
    finally:
        sys.path.remove(str(EXAMPLES))
    now = [0.0]
    ring = KeyRing(["a", "b", "c"], cooldown=10.0, clock=lambda: now[0])
    assert [ring.next() for _ in range(4)] == ["a", "b", "c", "a"]
    ring.set_aside("b")
    assert [ring.next() for _ in range(3)] == ["c", "a", "c"]
    now[0] = 10.0
    assert [ring.next() for _ in range(3)] == ["a", "b", "c"]


def test_the_minimal_agent_is_about_fifteen_lines():
    source = (EXAMPLES / "minimal.py").read_text()
    code = source.split('"""', 2)[2].strip().splitlines()
    assert len([line for line in code if line.strip()]) <= 16


# Bad agents.

def test_an_exception_in_the_agent_is_its_failure_with_the_traceback(humanfix_pytester,
                                                                    records_by_task):
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            ctx.run_tests(ctx.task.buggy_code)
            raise ValueError("no idea")
    """)
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-task",
                                         "Python/0", "--humanfix-iters", "1",
                                         "--humanfix-agent", agent)
    result.assert_outcomes(failed=1)  # scored, not a harness error
    record = record_of(records_by_task())
    assert record["outcome"] == "unfixed" and record["error"] == ""
    assert record["failure"].startswith("agents.py:agent raised ValueError: no idea\n")
    assert 'agents.py", line 3, in agent' in record["failure"]
    assert "contract.py" not in record["failure"]  # the agent's frames, not the plugin's
    assert [a["status"] for a in record["attempts"]] == ["failed"]  # nothing lost


@pytest.mark.parametrize(("body", "said"), [
    ("return 42", "agents.py:agent returned a int, not the final code: return the code as a "
                  "str, or None to give up."),
    ("ctx.run_tests(ctx.task.buggy_code)\n    try:\n        ctx.run_tests('x = 1')\n"
     "    except Exception:\n        pass\n    return ctx.task.buggy_code",
     "agents.py:agent called run_tests 2 times, and --humanfix-iters 0 allows 1 (the first "
     "attempt and one per repair round): stop at ctx.rounds + 1 calls, or raise "
     "--humanfix-iters."),
    ("return None", "agents.py:agent gave up (it returned None)."),
])
def test_a_contract_broken_is_the_agents_failure_in_one_line(humanfix_pytester, records_by_task,
                                                            body, said):
    agent = agent_file(humanfix_pytester, f"def agent(ctx):\n    {body}\n")
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-task",
                                         "Python/0", "--humanfix-agent", agent)
    result.assert_outcomes(failed=1)
    record = record_of(records_by_task())
    assert (record["outcome"], record["failure"]) == ("unfixed", said)


@pytest.mark.parametrize(("spec", "said"), [
    ("missing.py:agent", "--humanfix-agent missing.py:agent: there is no file missing.py"),
    ("agents.py:other", "--humanfix-agent agents.py:other: {path} has no other; name the agent "
                        "after the colon (callables defined there: agent)."),
    ("agents.py:NUMBER", "--humanfix-agent agents.py:NUMBER: NUMBER in {path} is a int, not an "
                         "agent"),
    ("no_such_module:agent", "--humanfix-agent no_such_module:agent: there is no module "
                             "'no_such_module'; install it"),
    ("broken.py:agent", "--humanfix-agent broken.py:agent: importing {broken} raised "
                        "ZeroDivisionError: division by zero ({broken}:2); fix the file"),
    ("syntax.py:agent", "--humanfix-agent syntax.py:agent: importing {syntax} raised "
                        "SyntaxError: expected ':' ({syntax}:1); fix the file"),
    ("agents", "--humanfix-agent / humanfix_agent: 'agents' must be repair, tools, "
               "resample, rewrite, module:callable or path/to/file.py:callable"),
])
def test_an_agent_that_cannot_be_loaded_is_a_one_line_usage_error(humanfix_pytester, spec,
                                                                  said):
    agent_file(humanfix_pytester, "NUMBER = 1\ndef agent(ctx):\n    return None\n")
    humanfix_pytester.makepyfile(broken="x = 1\ny = 1 / 0\n", syntax="def agent(ctx)\n")
    result = humanfix_pytester.runpytest_subprocess("--humanfix-model", "canonical",
                                                    "--humanfix-agent", spec)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    path = humanfix_pytester.path
    expected = said.format(path=path / "agents.py", broken=path / "broken.py",
                           syntax=path / "syntax.py")
    [line] = [line for line in result.errlines if "humanfix" in line]
    assert line.removeprefix("ERROR: ").startswith(expected), line


@pytest.mark.parametrize(("options", "said"), [
    (["--humanfix-prompt", "completion"], "talks with the model through ctx.model.chat, and "
                                          "--humanfix-prompt completion does not"),
    (["--humanfix-repeat-check", "2"], "--humanfix-repeat-check asks the built-in agent's first "
                                       "reply again"),
])
def test_what_a_brought_agent_cannot_do_is_a_usage_error(humanfix_pytester, options, said):
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-agent",
                                         MINIMAL, *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in "\n".join(result.errlines)


def test_a_hanging_agent_meets_the_item_timeout(humanfix_pytester, records_by_task):
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
            while True:
                pass
    """)
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-task",
                                         "Python/0", "--humanfix-item-timeout", "1",
                                         "--humanfix-agent", agent)
    result.assert_outcomes(errors=1)
    record = record_of(records_by_task())
    assert record["outcome"] == "error" and record["item_timeout"] is True


def test_a_model_fault_is_a_harness_error_even_when_the_agent_catches_it(
        humanfix_pytester, records_by_task):
    replies = humanfix_pytester.path / "replies.jsonl"
    replies.write_text(json.dumps({"task_id": "Python/1", "completion": "x"}) + "\n")
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            try:
                ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
            except Exception:
                pass
            return ctx.task.buggy_code
    """)
    result = humanfix_pytester.runpytest(f"--humanfix-model=replay:{replies}",
                                         "--humanfix-task", "Python/0", "--humanfix-agent",
                                         agent)
    result.assert_outcomes(errors=1)
    record = record_of(records_by_task())
    assert record["outcome"] == "error"
    assert "replay file has no reply for Python/0" in record["error"]


def test_a_fixture_that_gives_no_agent_is_an_error_naming_it(humanfix_pytester, records_by_task):
    humanfix_pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def humanfix_agent(request):
            return "repair" if request.node.name.startswith("Python_0") else None
    """)
    result = humanfix_pytester.runpytest("--humanfix-model", "canonical", "--humanfix-task",
                                         "Python/0,Python/1")
    result.assert_outcomes(errors=2)
    said = ("pytest_humanfix.agent.loader.AgentLoadError: the humanfix_agent fixture returned "
            "{}, not an agent: return a function that takes the context, or a compiled "
            "LangGraph graph.")
    records = records_by_task()
    assert [records[t]["error"] for t in ("Python/0", "Python/1")] == \
        [said.format("str"), said.format("NoneType")]


@pytest.mark.parametrize("variant", ["tests", "docs"])
def test_an_agent_sees_the_hidden_tests_only_where_the_variant_shows_them(tmp_path, tasks,
                                                                          variant):
    task = tasks["Python/0"]
    seen: list[str] = []

    def agent(ctx):
        reply = ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
        result = ctx.run_tests(task.buggy_code)
        seen.extend([reply, *map(str, vars(ctx.task).values()), *map(str, vars(result).values()),
                     *map(str, vars(ctx.settings).values())])
        return task.buggy_code

    settings = Settings(model="buggy", variant=variant, iters=1)
    result = run_agent(agent, "agent", task, lambda: load_model("buggy", GenerationConfig.of(settings)),
                       CountingSandbox(), settings)
    hidden = task.test.split("def check(")[1]
    assert any(hidden in text for text in seen) == (variant == "tests")
    attempt = result.attempts[0]
    assert attempt.tests == ("test" if variant == "tests" else "example_test")


def test_tool_calls_are_replies_and_run_tests_checks_before_it_runs(tmp_path, tasks):
    task = tasks["Python/0"]
    sandbox = CountingSandbox()

    def agent(ctx):
        tool = {"type": "function", "function": {"name": "run_tests", "parameters": {}}}
        reply = ctx.model.reply([{"role": "user", "content": ctx.task.prompt}], tools=[tool])
        [call] = reply.tool_calls
        rejected = ctx.run_tests("def has_close_elements(numbers)\n")
        assert (rejected.status, rejected.passed, rejected.tests) == ("rejected", False, "")
        assert rejected.feedback.startswith("Your code was not run: ")
        assert not sandbox.programs  # the check runs nothing
        passed = ctx.run_tests(call.argument("code"))
        assert (passed.status, passed.feedback, passed.attempt) == ("passed", "", 2)
        again = ctx.run_tests(call.argument("code"))  # not run again, and still passing
        assert (again.status, again.passed, again.attempt) == ("repeat", True, 3)
        return call.argument("code")

    settings = Settings(model="canonical", iters=2)
    result = run_agent(agent, "agent", task, lambda: load_model("canonical", GenerationConfig.of(settings)),
                       sandbox, settings)
    assert result.outcome == "fixed" and result.fixed_round == 1 and result.final_attempt == 1
    assert [(a.tool_calls, a.status, a.round) for a in result.attempts] == \
        [(1, "rejected", 0), (None, "passed", 1), (None, "repeat", 2)]
    assert len(sandbox.programs) == 1  # the passing run is the graded one


def test_the_ini_key_names_the_agent_relative_to_the_ini_file(humanfix_pytester, monkeypatch):
    agent_file(humanfix_pytester, """
        def agent(ctx):
            return ctx.task.buggy_code.replace("elem - elem2", "abs(elem - elem2)")
    """)
    humanfix_pytester.makeini("[pytest]\naddopts = -p no:randomly\n"
                              "humanfix_agent = agents.py:agent\n")
    sub = humanfix_pytester.mkdir("sub")
    monkeypatch.chdir(sub)  # started below the ini file, which names the agent beside it
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-task",
                                         "Python/0", f"--humanfix-report-dir={sub}")
    result.assert_outcomes(passed=1)
    record = json.loads((sub / "humanfix.jsonl").read_text())
    assert record["protocol"]["agent"].startswith("agents.py:agent@")
    assert record["outcome"] == "fixed"


def test_a_graph_that_ends_without_code_is_its_failure(tasks):
    class Graph:
        """A compiled graph's interface, and a state without `code` at its end."""

        def invoke(self, state, context):
            return {"messages": state["messages"]}

        def get_graph(self):
            return None

    settings = Settings(model="canonical")
    result = run_agent(Graph(), "graph.py:graph", tasks["Python/0"],
                       lambda: load_model("canonical", GenerationConfig.of(settings)), CountingSandbox(), settings)
    assert (result.outcome, result.failure) == (
        "unfixed", "graph.py:graph ended without a `code` in its state: give the graph's state "
                   "a code key, set to the final code (or None).")


def test_a_brought_agents_shards_merge_and_its_run_replays(humanfix_pytester):
    folders = []
    for shard in ("1/2", "2/2"):
        folder = humanfix_pytester.path / f"shard-{shard[0]}"
        humanfix_pytester.runpytest(
            "--humanfix-model", "buggy", "--humanfix-max", "4", "--humanfix-iters", "1",
            "--humanfix-agent", MINIMAL, "--humanfix-shard", shard,
            f"--humanfix-report-dir={folder}")
        folders.append(folder / "humanfix.jsonl")
    merged = humanfix_pytester.path / "merged"
    done = subprocess.run([str(Path(sys.executable).parent / "humanfix-report"), "merge",
                           *map(str, folders), "--out", str(merged)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "merged 2 shard(s), 4 task(s)" in done.stdout
    # The merged run replayed: the agent gets its recorded replies back, in order.
    replayed = humanfix_pytester.path / "replayed"
    humanfix_pytester.runpytest(
        f"--humanfix-model=replay:{merged / 'humanfix.jsonl'}", "--humanfix-max", "4",
        "--humanfix-iters", "1", "--humanfix-agent", MINIMAL,
        f"--humanfix-report-dir={replayed}").assert_outcomes(failed=4)
    compared = subprocess.run(
        [sys.executable, str(COMPARE_AGENTS),
         str(merged / "humanfix.jsonl"), str(replayed / "humanfix.jsonl")],
        capture_output=True, text=True)
    assert compared.returncode == 0, compared.stdout
    assert compared.stdout.strip().endswith("8 replies in the first run; fixed 0 and 0; "
                                            "0 tasks differ")


def test_the_chat_client_asks_a_server_and_counts_its_tokens(humanfix_pytester, tasks,
                                                             records_by_task):
    with StubServer(reply=fenced(tasks["Python/0"].canonical_code)) as stub:
        result = humanfix_pytester.runpytest(
            "--humanfix-model", "openai:stub", f"--humanfix-base-url={stub.base_url}",
            "--humanfix-task", "Python/0", "--humanfix-agent", MINIMAL)
        [request] = [body for body in stub.posts() if "messages" in body]
    result.assert_outcomes(passed=1)
    assert request["messages"] == [
        {"role": "user", "content": prompts.first_prompt(tasks["Python/0"], "tests")}]
    assert request["temperature"] == 0.0  # the run's, where the agent gives none
    attempt = record_of(records_by_task())["attempts"][0]
    assert (attempt["engine"], attempt["server"], attempt["prompt_tokens"],
            attempt["completion_tokens"]) == ("openai", stub.base_url, 11, 7)


def test_code_the_agent_did_not_run_is_graded_on_its_latest_reply_not_run(tasks):
    task = tasks["Python/0"]

    def agent(ctx):
        asked = [{"role": "user", "content": ctx.task.prompt}]
        ctx.model.chat(asked)
        ctx.run_tests(task.buggy_code)
        ctx.model.chat(asked, temperature=0.5)
        return task.canonical_code  # in no attempt: it is that last reply's

    settings = Settings(model="buggy", iters=1)
    result = run_agent(agent, "agent", task, lambda: load_model("buggy", GenerationConfig.of(settings)),
                       CountingSandbox(), settings)
    assert [(a.status, a.round, a.temperature) for a in result.attempts] == \
        [("failed", 0, 0.0), ("graded", 1, 0.5)]
    assert (result.outcome, result.final_attempt, result.fixed_round) == ("fixed", 1, 1)


# Agent failures, agents with their own model, and an agent's identity.

RAISING = """
    def agent(ctx):
        raise ValueError("my model is down")
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["one process", "xdist"])
def test_an_agent_that_raises_on_every_task_fails_the_gate_and_every_report_counts_it(
        humanfix_pytester, records_by_task, xdist):
    # No --humanfix-model: the brought agent alone activates the plugin.
    agent = agent_file(humanfix_pytester, RAISING)
    workers = ["-n", "2"] if xdist else []
    result = humanfix_pytester.runpytest("--humanfix-agent", agent, "--humanfix-max", "5",
                                         "--humanfix-fail-under", "0", "-rx", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.outlines[-15:]
    records = records_by_task()
    assert [r["agent_error"] for r in records.values()] == \
        [{"type": "ValueError", "message": "my model is down"}] * 5
    assert {r["outcome"] for r in records.values()} == {"unfixed"}
    assert {r["model"] for r in records.values()} == {None}
    reports = humanfix_pytester.path / "reports"
    summary = json.loads((reports / "summary.json").read_text())
    assert (summary["tasks"]["agent_errors"], summary["tasks"]["unfixed"],
            summary["tasks"]["errors"]) == (5, 0, 0)
    assert [row["task_id"] for row in summary["agent_errors"]] == \
        [f"Python/{n}" for n in range(5)]
    assert summary["gate_failed"]
    assert any(line.startswith("fixed 0, not fixed 0, agent errors 5 (the agent raised; scored "
                               "not fixed), errors 0") for line in result.outlines)
    assert "model: none named (the agent brings its own)" in result.outlines
    [verdict] = [line for line in result.outlines if line.startswith("humanfix gate")]
    assert verdict.startswith("humanfix gate FAILED: the agent raised on every one of the 5 "
                              "scored task(s) (first, Python/0: ValueError: my model is down)")
    assert "5 agent error(s)" in (reports / "summary.md").read_text()
    # No report calls the buggy code a candidate.
    assert any("(no candidate: the agent raised ValueError: my model is down)" in line
               for line in result.outlines)
    assert not any("the candidate is the buggy code" in line for line in result.outlines)
    suite = ET.parse(reports / "junit.xml").find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["humanfix_agent_errors"] == "5"
    # The failed gate is the one failure, as the exit status says.
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("6", "1", "5")
    [gate] = [case for case in suite.iter("testcase") if case.get("name") == "gates"]
    assert gate.find("failure").get("message").startswith("humanfix gate FAILED: the agent")


def test_an_agent_with_its_own_model_runs_without_one_and_ctx_model_says_so(
        humanfix_pytester, records_by_task):
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            if ctx.task.task_id == "Python/1":
                return ctx.model.chat([{"role": "user", "content": ctx.task.prompt}])
            return ctx.task.buggy_code.replace("elem - elem2", "abs(elem - elem2)")
    """)
    result = humanfix_pytester.runpytest("--humanfix-agent", agent, "--humanfix-task",
                                         "Python/0,Python/1")
    result.assert_outcomes(passed=1, failed=1)
    records = records_by_task()
    assert records["Python/0"]["outcome"] == "fixed"
    assert records["Python/1"]["agent_error"]["type"] == "NoModel"
    assert "name one with --humanfix-model SPEC" in records["Python/1"]["agent_error"]["message"]


def test_a_named_model_that_cannot_load_is_no_failure_above_no_error(humanfix_pytester):
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            return ctx.task.buggy_code.replace("elem - elem2", "abs(elem - elem2)")
    """)
    result = humanfix_pytester.runpytest(
        "--humanfix-agent", agent, "--humanfix-task", "Python/0", "--humanfix-model",
        "openai:nothing", "--humanfix-base-url", "http://127.0.0.1:9/v1")
    # Either refused at the start (a server checked before any task), or run by the agent,
    # which never asked the model: never a load failure told above "errors 0".
    if result.ret == pytest.ExitCode.USAGE_ERROR:
        return
    result.assert_outcomes(passed=1)
    assert not any("MODEL LOAD FAILED" in line for line in result.outlines)
    assert any(line.startswith("WARNING: model 'openai:nothing' failed to load")
               and "no task asked the model" in line for line in result.outlines)


def test_an_agent_is_resumed_however_its_path_is_typed_and_refused_once_edited(
        humanfix_pytester, read_records):
    agent = agent_file(humanfix_pytester, """
        def agent(ctx):
            return ctx.task.buggy_code
    """)
    humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-agent", agent,
                                "--humanfix-max", "2")
    [first, _] = read_records()
    absolute = f"{humanfix_pytester.path / 'agents.py'}:agent"
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-agent",
                                         absolute, "--humanfix-max", "3", "--humanfix-resume")
    assert any(line.startswith("resumed: 2 task(s)") for line in result.outlines)
    records = read_records()
    assert len(records) == 3
    assert {r["protocol"]["agent"] for r in records} == {first["protocol"]["agent"]}
    (humanfix_pytester.path / "agents.py").write_text(
        "def agent(ctx):\n    return None\n", encoding="utf-8")
    result = humanfix_pytester.runpytest("--humanfix-model", "buggy", "--humanfix-agent",
                                         agent, "--humanfix-max", "3", "--humanfix-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"agent: {first['protocol']['agent']!r} there, 'agents.py:agent@" in \
        "\n".join(result.errlines)
