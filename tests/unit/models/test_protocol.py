"""BigCode's protocol to the letter (issue 24), each point pinned against bigcode-evaluation-harness
(commit 8fc5bae, read with `git show HEAD:<file>`): the length budget of prompt and reply
together, the end of a completion where it leaves the function, stop words matched on the text
with special tokens kept, generation off the item's clock, and an execution lost before it
started run once more.

Small fakes stand in for tokenizers and models where a real one is not needed."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_humanfix.agent import prompts
from pytest_humanfix.agent.extract import continued_code
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.languages import LANGUAGES
from pytest_humanfix.models.base import ReplySeeds
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models.engines.llamacpp import decode, jobs, protocol
from pytest_humanfix.models.engines.llamacpp.chat import PromptText
from pytest_humanfix.models.hf import TransformersModel, decoding_kwargs
from pytest_humanfix.models.openai_api import OpenAIModel
from pytest_humanfix.models.stopping import function_end, function_end_stops, stop_point
from pytest_humanfix.reporting.summary import build
from pytest_humanfix.reporting.terminal import summary_lines
from pytest_humanfix.sandbox.choose import make_sandbox
from pytest_humanfix.sandbox.environment import ExecutionLost, Limits, SandboxError
from pytest_humanfix.sandbox.fresh import Execution
from pytest_humanfix.sandbox.layers import ProcessLayer
from pytest_humanfix.sandbox.program import build_program
from pytest_humanfix.sandbox.rerun import TaskSandbox
from pytest_humanfix.session.timeouts import generation_off_clock
from pytest_humanfix.protocol import RunProtocol
from pytest_humanfix.settings import Settings

PYTHON_STOP = list(LANGUAGES["python"].stop_words)


# -- BigCode's own code, copied from bigcode_eval/tasks/humanevalpack.py -----------------------

def bigcode_check_fn(code: str, language: str, stop_words: list[str]) -> bool:
    """`HumanEvalPackGenerative.check_fn`, as written there (instruct prompt)."""
    if any([w in code for w in stop_words]):
        return True
    if language == "python":
        for line in code.split("\n"):
            if len(line.strip()) > 0 and line[0] != ' ' and line[0] != '\t':
                return True
    else:
        open_brackets = 2 if language == "java" else 1
        if code.count("{") + open_brackets == code.count("}"):
            return True
    return False


def bigcode_remove_last_block(code: str, language: str, stop_words: list[str]) -> str:
    """`HumanEvalPackGenerative.remove_last_block`, up to where it cuts (its fallbacks for a
    block never closed are `agent.braces.remove_last_block`'s business, not stopping's)."""
    for w in stop_words:
        if w in code:
            code = code[:code.find(w)]
    if language == "python":
        for i, line in enumerate(code.split("\n")):
            if len(line.strip()) > 0 and line[0] != ' ' and line[0] != '\t':
                return "\n".join(code.split("\n")[:i])
    else:
        open_brackets = 2 if language == "java" else 1
        for i, c in enumerate(code):
            if c == '{':
                open_brackets += 1
            elif c == '}':
                open_brackets -= 1
            if open_brackets == 0:
                return code[:i + 1]
    return code


PYTHON_TEXTS = [
    "\n    return x\n",
    "\n    return x\nx = 1\n",
    "\n    if x:\n        return 1\n\n    return 2\n\nprint(f(1))",
    "\n    return x\n\tpass\n",
    "x\n    return 1",
    "\n    y = 1\n#comment\n",
    "\n    return x<|endoftext|>\n    return None",
    "\n    return x\n<|endoftext|>",
    "\n    return [x for x in y\n]\n",
    "",
    "\n\n\n",
]
BRACE_TEXTS = [
    ("js", "\n  return x;\n}\nconsole.log(f(1));\n"),
    ("js", "\n  if (x) { return 1; }\n  return 2;\n}"),
    ("js", "\n  if (x) { return 1; }\n"),
    ("java", "\n        return x;\n    }\n}\npublic class Main {}"),
    ("java", "\n        return x;\n    }\n"),
    ("cpp", "\n    return x;\n}\nint main(){}"),
    ("go", "\n    return x\n}\n"),
    ("rust", "\n    x + 1\n}\n\nfn other() {}"),
]


@pytest.mark.parametrize("text", PYTHON_TEXTS)
def test_a_python_completion_ends_where_bigcodes_check_fn_stops_and_remove_last_block_cuts(text):
    """humanevalpack.py `check_fn` (stopping criterion, used by generation.py's
    `EndOfFunctionCriteria`) and `remove_last_block` (the cut): `stop_point` fires exactly when
    check_fn does, and the reply it leaves is cut where remove_last_block cuts, up to the
    trailing newline `continued_code` strips anyway."""
    point = stop_point(text, PYTHON_STOP, LANGUAGES["python"].function_end)
    assert (point is not None) == bigcode_check_fn(text, "python", PYTHON_STOP)
    kept = text if point is None else text[:point]
    assert kept.rstrip() == bigcode_remove_last_block(text, "python", PYTHON_STOP).rstrip()


@pytest.mark.parametrize("language, text", BRACE_TEXTS)
def test_a_brace_completion_ends_where_bigcodes_check_fn_stops(language, text):
    """humanevalpack.py `check_fn` for the brace languages: it stops once the `}` balance the
    `{` the prompt base left open (two in Java); the cut is `remove_last_block`'s."""
    stop = list(LANGUAGES[language].stop_words)
    rule = LANGUAGES[language].function_end
    point = stop_point(text, stop, rule)
    assert (point is not None) == bigcode_check_fn(text, language, stop)
    if point is not None:
        assert text[:point] == bigcode_remove_last_block(text, language, stop)


@pytest.mark.parametrize("text", [t for t in PYTHON_TEXTS if function_end(t, "indent")])
def test_vllm_gets_the_python_rule_as_stop_strings(text):
    """vLLM matches strings only: a newline and any printable character but whitespace says
    check_fn's Python rule wherever the line that leaves the function is not the first."""
    stops = function_end_stops("indent")
    cut = min((i for i in (text.find(s) for s in stops) if i != -1), default=None)
    expected = function_end(text, "indent")
    assert cut == (expected if expected else None)
    assert function_end_stops("braces:1") == []  # counting is beyond a stop string


# -- transformers: a scripted model and a tokenizer of a few pieces ---------------------------

PIECES = {0: "<|endoftext|>", 1: "<|im_start|>", 2: "<|im_end|>", 10: "\n", 11: "    ",
          12: "return", 13: " x", 14: " None", 18: "print", 19: "(x)", 20: "x", 30: "def f():"}
SPECIAL = {0, 1, 2}
EOS = 2  # SmolLM2's layout: <|endoftext|> is id 0 and special, the end of sequence is id 2
PROMPT_IDS = [30, 30, 30, 30]


class Encoded(dict):
    def to(self, device: str) -> Encoded:
        return self


class PieceTokenizer:
    """Decodes ids to their pieces, special tokens dropped only when asked (as transformers'
    `decode(skip_special_tokens=True)`); every prompt is PROMPT_IDS."""

    eos_token = PIECES[EOS]
    chat_template = None

    def __call__(self, text: str, return_tensors: str) -> Encoded:
        return Encoded(input_ids=torch.tensor([PROMPT_IDS]))

    def apply_chat_template(self, messages: list[dict[str, str]], **kwargs: Any) -> Encoded:
        return self("", return_tensors="pt")

    def decode(self, ids: Any, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None) -> str:
        ids = ids.tolist() if hasattr(ids, "tolist") else ids
        return "".join(PIECES[i] for i in ids if not (skip_special_tokens and i in SPECIAL))


class ScriptedModel:
    """generate() as transformers runs it: one token a step, the stopping criteria asked after
    each, the end of sequence and max_new_tokens obeyed."""

    def __init__(self, script: list[int]) -> None:
        self.script = script
        self.steps = 0

    def generate(self, input_ids: Any, max_new_tokens: int, eos_token_id: int,
                 stopping_criteria: Any, **kwargs: Any) -> Any:
        ids = input_ids
        for token in self.script[:max_new_tokens]:
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
            self.steps += 1
            if token == eos_token_id or (stopping_criteria
                                         and bool(stopping_criteria(ids, None).all())):
                break
        return ids


def scripted(script: list[int], **settings: Any) -> TransformersModel:
    model = object.__new__(TransformersModel)
    model.spec, model.source, model.device, model.prompt = "fake", "fake", "cpu", "completion"
    model.config = GenerationConfig.of(Settings(**settings))
    model.tokenizer = PieceTokenizer()
    model.model = ScriptedModel(script)  # type: ignore[assignment]
    model.generate_kwargs = {**decoding_kwargs(model.config), "eos_token_id": EOS,
                             "pad_token_id": 0}
    model.seeds = ReplySeeds(model.config.seed)
    return model


@pytest.fixture(scope="module")
def task(dataset: Path):
    return load_tasks(str(dataset))[0]


RETURN_X = [10, 11, 12, 13]  # "\n    return x"


def test_a_stop_word_that_is_a_special_token_ends_the_completion(task):
    """generation.py `EndOfFunctionCriteria.__call__` decodes with `batch_decode` (special
    tokens kept) and utils.py `update_code_gens` decodes with `skip_special_tokens=False` once
    the end-of-sequence text is a stop word, so `<|endoftext|>` (special here, not the end of
    sequence) stops the reply. Decoded without special tokens, as before, it never matched and
    both lines were kept."""
    model = scripted([*RETURN_X, 0, *RETURN_X[:3], 14, EOS])
    generation = model.complete("prompt", PYTHON_STOP, task)
    assert generation.text == "\n    return x"
    assert generation.completion_tokens == 5 and generation.finish_reason == "stop"
    assert model.model.steps == 5  # type: ignore[attr-defined]
    # The graded code is cut at the stop word only there; the reply keeps what came before.
    assert continued_code(generation.text, "def f():\n") == "def f():\n    return x"


def test_the_tokenizers_end_of_sequence_text_is_a_stop_word(task):
    """generation.py `parallel_generations` appends `tokenizer.eos_token` to the stop words;
    the end of sequence that ends generation is never text (no server shows it either)."""
    model = scripted([*RETURN_X, EOS, *RETURN_X])
    generation = model.complete("prompt", PYTHON_STOP, task)
    assert generation.text == "\n    return x" and generation.completion_tokens == 5


def test_a_completion_stops_at_the_first_line_that_leaves_the_function(task):
    """humanevalpack.py `check_fn`, the stopping criterion: a non-empty unindented line ends the
    completion, long before the next stop word ("\\nprint" here). The reply keeps the start of
    that line, as BigCode's generation does, and `remove_last_block` cuts it from the graded
    code, which is byte for byte what the longer reply gave."""
    rest = [10, 11, 12, 14, 10, 18, 19]  # then "\n    return None\nprint(x)"
    model = scripted([*RETURN_X, 10, 20, *rest, EOS])
    generation = model.complete("prompt", PYTHON_STOP, task)
    assert generation.text == "\n    return x\nx"
    assert generation.completion_tokens == 6 and generation.finish_reason == "stop"
    before = PieceTokenizer().decode([*RETURN_X, 10, 20, *rest])  # stop words alone
    before = before[:stop_point(before, PYTHON_STOP)]
    assert continued_code(before, "def f():\n") == continued_code(generation.text, "def f():\n") \
        == "def f():\n    return x"


def test_a_chat_reply_is_decoded_without_special_tokens_and_not_cut(task):
    model = scripted([*RETURN_X, 10, 20, 0, EOS])
    generation = model.generate([{"role": "user", "content": "Fix f."}], task)
    assert generation.text == "\n    return x\nx" and generation.completion_tokens == 8


def test_max_length_counts_prompt_and_reply_together(task):
    """main.py `--max_length_generation` ("Maximum length of generated sequence
    (prompt+generation)") is generate()'s `max_length` in generation.py: a prompt of 4 tokens
    under a budget of 7 leaves 3 new tokens."""
    model = scripted([*RETURN_X, EOS], max_length=7)
    generation = model.complete("prompt", PYTHON_STOP, task)
    assert generation.completion_tokens == 3 and generation.finish_reason == "length"
    assert generation.text == "\n    return"


@pytest.mark.parametrize("budget", [4, 3])
def test_a_prompt_as_long_as_the_budget_gets_an_empty_reply(task, budget):
    """main.py loads the tokenizer with `truncation_side="left"`, and utils.py
    `TokenizedDataset` tokenizes with `truncation=True, max_length=max_length_generation`: a
    prompt of the budget or more is cut to the budget from the left, which leaves no room;
    `complete_code` then catches generate()'s "Input length of input_ids is ..." ValueError and
    keeps the input as the generation, so the continuation is empty."""
    model = scripted([*RETURN_X, EOS], max_length=budget)
    generation = model.complete("prompt", PYTHON_STOP, task)
    assert (generation.text, generation.completion_tokens, generation.prompt_tokens,
            generation.finish_reason) == ("", 0, 4, "length")
    assert model.model.steps == 0  # type: ignore[attr-defined]  # nothing was generated


def test_max_length_is_in_the_protocol_in_place_of_max_new_tokens():
    plain = RunProtocol.of(Settings(), "python").to_json()
    assert plain["max_new_tokens"] == 512 and "max_length" not in plain
    budget = RunProtocol.of(Settings(max_length=512), "python").to_json()
    assert budget["max_length"] == 512 and "max_new_tokens" not in budget


@pytest.mark.parametrize("ini, args", [
    ("", ["--humanfix-max-length=512", "--humanfix-max-new-tokens=100"]),
    ("humanfix_max_length = 512\n", ["--humanfix-max-new-tokens=100"]),
])
def test_max_length_and_max_new_tokens_together_are_a_usage_error(humanfix_pytester, ini, args):
    humanfix_pytester.makeini(f"[pytest]\naddopts = -p no:randomly\n{ini}")
    result = humanfix_pytester.runpytest("--humanfix-model=canonical", "--humanfix-max=1", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--humanfix-max-length (prompt and reply together*give one*"])


def test_max_length_from_the_ini_runs_and_is_recorded(humanfix_pytester, read_records):
    humanfix_pytester.makeini("[pytest]\naddopts = -p no:randomly\nhumanfix_max_length = 600\n")
    result = humanfix_pytester.runpytest("--humanfix-model=canonical", "--humanfix-max=1",
                                         "--humanfix-prompt=completion")
    result.assert_outcomes(passed=1)
    (record,) = read_records()
    assert record["protocol"]["max_length"] == 600 and "max_new_tokens" not in record["protocol"]
    result.stdout.fnmatch_lines(["pass@1 = 100.0% (1/1)*max_length=600*"])


# -- llama.cpp engine and vLLM: the same rules on a server ------------------------------------

class FakeLlama:
    """What `BatchedModel.accept` and `reply_text` use of llama-cpp-python."""

    @staticmethod
    def llama_vocab_is_eog(vocab: Any, token: int) -> bool:
        return token == EOS

    @staticmethod
    def llama_get_memory(ctx: Any) -> None:
        return None

    @staticmethod
    def llama_memory_seq_rm(*args: Any) -> None:
        return None

    @staticmethod
    def detokenize(tokens: list[int], special: bool = False) -> bytes:
        return "".join(PIECES[t] for t in tokens if special or t not in SPECIAL).encode()


def fake_engine() -> decode.BatchedModel:
    import threading

    engine = object.__new__(decode.BatchedModel)
    engine.lc = engine.text = FakeLlama()  # type: ignore[assignment]
    engine.prompts = PromptText(engine.text)
    engine.vocab = engine.ctx = None
    engine.context = 1000
    engine.free = []
    engine.wake = threading.Condition()
    return engine


def served(script: list[int], body: dict[str, Any]) -> tuple[jobs.Job, str]:
    engine = fake_engine()
    job = protocol.new_job(engine, {"max_tokens": 50, "temperature": 0, **body},  # type: ignore[arg-type]
                           list(PROMPT_IDS), [], 0, completion=True)
    for token in script:
        if not engine.accept(job, token):
            break
    return job, engine.reply_text(job)


def test_our_llama_cpp_engine_stops_where_the_function_ends():
    """The same `check_fn` rule in our engine's `accept`, asked for by the client with the
    `humanfix_function_end` field; stop words are matched on the text with special tokens."""
    script = [*RETURN_X, 10, 20, 10, 11, 12, 14, 10, 18, 19]
    job, text = served(script, {"stop": PYTHON_STOP, "humanfix_function_end": "indent"})
    assert (text, len(job.tokens), job.finish_reason) == ("\n    return x\nx", 6, "stop")
    job, text = served(script, {"stop": PYTHON_STOP})  # as before: on to "\nprint"
    assert (text, len(job.tokens)) == ("\n    return x\nx\n    return None", 12)
    job, text = served([*RETURN_X, 0, *RETURN_X], {"stop": PYTHON_STOP})
    assert (text, len(job.tokens)) == ("\n    return x", 5)


@pytest.mark.parametrize("value", ["bogus", "braces:0", 3])
def test_a_bad_function_end_rule_is_refused(value):
    with pytest.raises(jobs.RequestError, match="humanfix_function_end"):
        protocol.new_job(fake_engine(), {"humanfix_function_end": value},
                         list(PROMPT_IDS), [], 0, completion=True)


@pytest.mark.parametrize("engine, expected", [
    ("llamacpp", {"extra_body": {"humanfix_function_end": "indent"}}),
    ("vllm", {"stop": [*PYTHON_STOP, *function_end_stops("indent")],
              "extra_body": {"skip_special_tokens": False}}),
    ("openai", {}),  # a server we did not start: stop words, and the cut after the reply
])
def test_each_engine_is_asked_to_stop_as_it_can(engine, expected, task):
    model = object.__new__(OpenAIModel)
    model.engine = engine
    assert model.completion_stopping(PYTHON_STOP, task) == expected


def test_a_server_that_cannot_count_the_prompt_is_a_clear_error(task):
    from openai_stub import StubServer

    from pytest_humanfix.models.base import ModelLoadError

    with StubServer() as stub:
        model = OpenAIModel("openai:stub", "stub", GenerationConfig.of(Settings(
            model="openai:stub", base_url=stub.base_url, max_length=100, prompt="completion")))
        with pytest.raises(ModelLoadError, match="--humanfix-max-length counts each prompt's "
                                                 "tokens.*give --humanfix-max-new-tokens"):
            model.complete("def f():", PYTHON_STOP, task)


# -- generation off the item's clock ------------------------------------------------------------

SLOW_MODEL_CONFTEST = """
import time
import pytest_humanfix.session.runner as runner_module

real_load = runner_module.load_model


class Slow:
    '''The control model, {seconds} s a reply: a slow machine's model.'''

    def __init__(self, model):
        self.model, self.spec, self.prompt = model, model.spec, model.prompt
        self.computed_by = model.computed_by

    def generate(self, *args, **kwargs):
        time.sleep({seconds})
        return self.model.generate(*args, **kwargs)

    def complete(self, *args, **kwargs):
        time.sleep({seconds})
        return self.model.complete(*args, **kwargs)


def slow_load(spec, settings):
    return Slow(real_load(spec, settings))


# At import: the plugin may load the model in its own pytest_configure, before this file's.
runner_module.load_model = slow_load


def pytest_unconfigure(config):
    runner_module.load_model = real_load
"""
LOOPING_TASK = "Python/10"  # its buggy solution never returns


def test_a_slow_generation_is_no_timeout_and_a_timeout_is_counted_apart(humanfix_pytester,
                                                                         records_by_task):
    """Replies take 3 s against an item timeout of 2 s: Python/0 is scored all the same; the
    looping task's execution (limit 60 s) still runs into the item timeout, which is reported
    apart from harness errors and scored not fixed."""
    humanfix_pytester.makeconftest(SLOW_MODEL_CONFTEST.format(seconds=3))
    # In a process of its own: an in-process run may hold a runner module other than the one
    # the conftest patches (pytester drops the modules each run imported).
    result = humanfix_pytester.runpytest_subprocess(
        "--humanfix-model=buggy", f"--humanfix-task=Python/0,{LOOPING_TASK}",
        "--humanfix-timeout=60", "--humanfix-item-timeout=2")
    result.assert_outcomes(failed=1, errors=1)
    got = records_by_task()
    assert got["Python/0"]["outcome"] == "unfixed" and not got["Python/0"]["item_timeout"]
    assert got["Python/0"]["attempts"][0]["generate_seconds"] >= 3
    stopped = got[LOOPING_TASK]
    assert stopped["outcome"] == "error" and stopped["item_timeout"]
    assert "item timeout fired" in stopped["error"]
    result.stdout.fnmatch_lines([
        "pass@1 = 0.0% (0/2)*",
        "*fixed 0, not fixed 1, errors 0 (harness faults, scored not fixed), item timeouts 1 "
        "(scored not fixed)",
        f"WARNING: 1 task(s) stopped by the item timeout (generation excluded), scored not "
        f"fixed: {LOOPING_TASK}; raise --humanfix-item-timeout"])
    summary = json.loads((humanfix_pytester.path / "reports" / "summary.json").read_text())
    assert summary["tasks"]["errors"] == 0 and summary["tasks"]["item_timeouts"] == 1
    assert summary["tasks"]["retried"] == 0, "an item timeout is not retried"
    assert summary["pass_at_1"]["tasks"] == 2
    assert "pass_at_1_if_timeouts_failed" not in summary


def test_the_alarm_is_stopped_while_a_reply_is_generated_and_set_again_after():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *args: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with generation_off_clock():
            time.sleep(0.8)
            assert signal.getitimer(signal.ITIMER_REAL)[0] == 0 and not fired
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0.4 < left <= 0.5  # what it had left, not a new full period
        time.sleep(0.7)
        assert fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def record(task_id: str, outcome: str, **fields: Any) -> dict[str, Any]:
    return {"task_id": task_id, "bug_type": "b", "outcome": outcome, "entry_point": "f",
            **fields}


def test_the_summary_scores_item_timeouts_not_fixed_and_counts_them_apart():
    records = [record("Python/0", "fixed"), record("Python/1", "unfixed"),
               record("Python/2", "error", item_timeout=True, error="item timeout fired ..."),
               # written before `item_timeout` was kept: its error says it
               record("Python/3", "error", error="item timeout fired after 360.0 s (...)"),
               record("Python/4", "error", error="cannot reach the server")]
    summary = build(records, {"wall_seconds": 1.0})
    assert summary["tasks"]["errors"] == 1 and summary["tasks"]["item_timeouts"] == 2
    assert summary["pass_at_1"]["value"] == 0.2 and summary["pass_at_1"]["tasks"] == 5
    assert [e["task_id"] for e in summary["errors"]] == ["Python/4"]
    assert [e["task_id"] for e in summary["item_timeouts"]] == ["Python/2", "Python/3"]
    lines = summary_lines(summary)
    assert ("WARNING: 2 task(s) stopped by the item timeout (generation excluded), scored not "
            "fixed: Python/2, Python/3; raise --humanfix-item-timeout") in lines


# -- an execution lost before it started ----------------------------------------------------------

def test_the_summary_counts_the_executions_lost_and_run_again():
    records = [record("Python/0", "fixed", verdict={"status": "passed", "lost": "killed"}),
               record("Python/1", "unfixed", verdict={"status": "failed", "lost": ""})]
    summary = build(records, {"wall_seconds": 1.0})
    assert summary["timeouts"]["lost"] == 1
    assert "sandbox: 1 graded execution(s) lost before the program started (the process " \
           "killed from outside) and run once more" in summary_lines(summary)


def test_a_program_that_never_started_and_left_no_output_is_a_lost_execution(tmp_path):
    """What a warm child killed before it wrote anything leaves behind: empty output files,
    which the harness made itself."""
    execution = Execution(tmp_path, tmp_path)
    execution.prepare("")
    with pytest.raises(ExecutionLost, match="killed by SIGKILL before the program started, "
                                            "and left no output"):
        execution.verdict(-9, False, 0.1, Limits(), ProcessLayer(), "warm")


def test_a_sandbox_that_says_why_it_did_not_start_is_a_harness_fault(tmp_path):
    execution = Execution(tmp_path, tmp_path)
    execution.prepare("")
    execution.stderr.write_text("humanfix sandbox: cannot set RLIMIT_AS\n")
    with pytest.raises(SandboxError, match="did not start: humanfix sandbox: cannot set") as err:
        execution.verdict(113, False, 0.1, Limits(), ProcessLayer(), "fresh")
    assert not isinstance(err.value, ExecutionLost)


def killing_child(warm: Any, monkeypatch: pytest.MonkeyPatch, when: str, times: int) -> None:
    """Kills the warm executor's next `times` children from outside, after the fork: before the
    harness puts the child in its cgroup, or once it is there, before its configuration."""
    victims: list[int] = []
    waiting_child, send = warm._waiting_child, warm._send

    def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        stat = Path(f"/proc/{pid}/stat")
        while stat.exists() and stat.read_text().rpartition(")")[2].split()[0] != "Z":
            time.sleep(0.01)

    def child() -> int:
        pid = waiting_child()
        if len(victims) < times:
            victims.append(pid)
            if when == "before its cgroup":
                kill(pid)
        return pid

    def send_config(text: str) -> None:
        if when == "before its configuration" and text.startswith("{") and victims \
                and Path(f"/proc/{victims[-1]}").exists():
            kill(victims[-1])
        send(text)

    monkeypatch.setattr(warm, "_waiting_child", child)
    monkeypatch.setattr(warm, "_send", send_config)


@pytest.mark.parametrize("when", ["before its cgroup", "before its configuration"])
def test_a_warm_child_killed_between_fork_and_execution_is_run_once_more(monkeypatch, when):
    warm = make_sandbox("auto", "warm", Limits(timeout=10)).sandbox
    assert warm.executor == "warm"
    killing_child(warm, monkeypatch, when, times=1)
    verdict = TaskSandbox(warm, 10.0).run(build_program("", "print('ran')"))
    assert verdict.passed and verdict.stdout.strip() == "ran"
    assert "lost the execution" in verdict.lost or "vanished before the program" in verdict.lost
    assert not verdict.rerun  # not a timeout's re-run
    # The executor serves the next execution as usual.
    assert warm.run(build_program("", "print(2)")).passed
    warm.shutdown()


def test_a_warm_child_lost_twice_is_a_harness_fault_that_says_so(monkeypatch):
    warm = make_sandbox("auto", "warm", Limits(timeout=10)).sandbox
    killing_child(warm, monkeypatch, "before its configuration", times=2)
    with pytest.raises(SandboxError, match="lost the execution: its process was killed by "
                                           "SIGKILL.*; run once more, alone: .*SIGKILL") as err:
        TaskSandbox(warm, 10.0).run(build_program("", "print('ran')"))
    assert not isinstance(err.value, ExecutionLost)
    warm.shutdown()


def test_the_prompt_passed_to_a_completion_is_bigcodes(task):
    """Guard for the fakes above: the stop words are BigCode's LANGUAGE_TO_STOP_WORDS["python"]
    plus "<|endoftext|>" (humanevalpack.py `HumanEvalPack.__init__`)."""
    assert prompts.stop_words(task) == ["\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif",
                                        "\nassert", "<|endoftext|>"]
