"""The transformers backend on the tiny random model, alone and through pytest with two workers."""

from __future__ import annotations

import dataclasses
import shutil
import types
from collections import Counter
from pathlib import Path

import pytest
from tinymodel import CHAT_TEMPLATE

from pytest_humanfix.agent import prompts
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.models import hf as hf_backend
from pytest_humanfix.models.base import ModelLoadError
from pytest_humanfix.models.hf import TransformersModel, decoding_kwargs, torch_dtype
from pytest_humanfix.models.specs import load_model
from pytest_humanfix.settings import Settings

QWEN3_LIKE_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
MESSAGES = [{"role": "user", "content": "Fix bugs in has_close_elements."}]


@pytest.fixture(scope="module")
def task(dataset: Path):
    return load_tasks(str(dataset))[0]


def tiny(tiny_model: Path, **settings) -> TransformersModel:
    return TransformersModel(str(tiny_model), str(tiny_model),
                             GenerationConfig.of(Settings(model=str(tiny_model), **settings)))


def test_greedy_at_temperature_zero_and_plain_sampling_otherwise() -> None:
    assert decoding_kwargs(GenerationConfig(max_new_tokens=7)) == {
        "max_new_tokens": 7, "repetition_penalty": 1.0, "do_sample": False}
    assert decoding_kwargs(GenerationConfig(temperature=0.2)) == {
        "max_new_tokens": 512, "repetition_penalty": 1.0, "do_sample": True,
        "temperature": 0.2, "top_p": 1.0, "top_k": 0}


def test_bf16_on_cuda_and_fp32_on_cpu() -> None:
    import torch

    assert torch_dtype(torch, "cuda") is torch.bfloat16
    assert torch_dtype(torch, "cpu") is torch.float32


def test_workers_share_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = []
    fake_torch = types.SimpleNamespace(set_num_threads=threads.append)
    monkeypatch.setattr(hf_backend.os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    hf_backend._share_cpus(fake_torch)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    hf_backend._share_cpus(fake_torch)
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the user's own choice is left alone
    hf_backend._share_cpus(fake_torch)
    assert threads == [2, 8]


def test_generation_counts_tokens_and_time(tiny_model: Path, task) -> None:
    import torch

    model = tiny(tiny_model, max_new_tokens=12)
    # Asserted as torch finds the machine, so that the suite passes on a GPU machine too.
    assert (model.device, model.model.dtype) == (
        ("cuda", torch.bfloat16) if torch.cuda.is_available() else ("cpu", torch.float32))
    reply = model.generate(MESSAGES, task)
    prompt = model.tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True,
                                                 return_dict=False)
    assert reply.prompt_tokens == len(prompt)
    assert 1 <= reply.completion_tokens <= 12
    assert reply.seconds > 0
    # Greedy: the same conversation gets the same reply.
    assert model.generate(MESSAGES, task).text == reply.text
    # Its stop strings end it before the first of them (--humanfix-chat-stop).
    word = reply.text[1:3]
    assert word, reply.text
    stopped = model.generate(MESSAGES, task, stop=["never said", word])
    assert stopped.text == reply.text[:reply.text.index(word)]
    assert stopped.finish_reason == "stop"


def test_sampling_follows_the_seed(tiny_model: Path, task) -> None:
    def first_reply(seed: int) -> str:
        return tiny(tiny_model, max_new_tokens=16, temperature=1.0, seed=seed) \
            .generate(MESSAGES, task).text

    assert first_reply(3) == first_reply(3)
    assert first_reply(3) != first_reply(4)


def test_thinking_is_turned_off_in_the_chat_template(tiny_model: Path) -> None:
    model = tiny(tiny_model)
    model.tokenizer.chat_template = QWEN3_LIKE_TEMPLATE
    prompt = model.tokenizer.decode(model.prompt_ids(MESSAGES)["input_ids"][0])
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_a_primed_answer_is_the_chat_template_left_open_after_the_prompt_base(
        tiny_model: Path, task) -> None:
    model = tiny(tiny_model, max_new_tokens=8, prompt="primed")
    assert model.prompt == "primed"
    start = prompts.answer_start(task, "tests")
    ids = model.prompt_ids(MESSAGES, start)["input_ids"][0].tolist()
    text = ("<|im_start|>user\nFix bugs in has_close_elements.<|im_end|>\n"
            "<|im_start|>assistant\n" + start)
    # Exactly that text, tokenized whole: no end of turn after the start, nothing after it.
    assert ids == model.tokenizer(text, add_special_tokens=False)["input_ids"]
    primed = model.continue_answer(MESSAGES, start, [], task)
    assert primed.prompt_tokens == len(ids) and primed.engine == "transformers"
    # The model continues those tokens as it would continue the same text given raw (before
    # any rule of where a function ends, which a completion adds and a primed answer does not).
    raw = model.tokenizer(text, add_special_tokens=False, return_tensors="pt").to(model.device)
    assert primed.text == model._run(raw, task, [], None).text
    assert primed.text != model.generate(MESSAGES, task).text
    # Cut at a stop word inside the continuation, as a completion is.
    word = primed.text[1:3]
    stopped = model.continue_answer(MESSAGES, start, ["never said", word], task)
    assert stopped.text == primed.text[:primed.text.index(word)]


def test_a_gguf_file_loads_with_its_own_tokenizer_and_chat_template(
        tiny_model: Path, tiny_gguf: Path, task) -> None:
    import torch

    model = load_model(str(tiny_gguf), GenerationConfig.of(Settings(model=str(tiny_gguf), max_new_tokens=12)))
    assert isinstance(model, TransformersModel) and model.source == str(tiny_gguf)
    assert model.tokenizer.chat_template == CHAT_TEMPLATE and model.prompt == "chat"
    # Dequantized to the dtype of the device it runs on (bf16 on a GPU, fp32 on a CPU).
    assert model.model.dtype == torch_dtype(torch, model.device)
    # The same weights and vocabulary as the folder it was written from: the same reply.
    folder = tiny(tiny_model, max_new_tokens=12).generate(MESSAGES, task)
    reply = model.generate(MESSAGES, task)
    assert (reply.text, reply.prompt_tokens) == (folder.text, folder.prompt_tokens)
    assert reply.engine == "transformers"


def test_a_reply_cut_by_the_token_limit_says_length(tiny_model: Path, task) -> None:
    model = tiny(tiny_model, max_new_tokens=6)
    reply = model.generate(MESSAGES, task)
    first = model.tokenizer.encode(reply.text)[0]
    assert first not in (model.tokenizer.eos_token_id, model.tokenizer.pad_token_id)
    assert (reply.completion_tokens, reply.finish_reason) == (6, "length")
    # The same first token declared the end of sequence: the reply ends there, stopped.
    model.generate_kwargs["eos_token_id"] = first
    stopped = model.generate(MESSAGES, task)
    assert (stopped.completion_tokens, stopped.finish_reason) == (1, "stop")


def test_a_model_without_chat_template_is_prompted_for_a_completion(
        tiny_base_model: Path, task) -> None:
    model = tiny(tiny_base_model, max_new_tokens=8)
    assert model.prompt == "completion"
    prompt = "def has_close_elements(numbers, threshold):"
    # The tiny model continues with "):):...", an unindented first line: BigCode's check_fn
    # ends a Python completion there, after one token (tests/unit/models/test_protocol.py has the rule).
    ended = model.complete(prompt, [], task)
    assert (ended.text, ended.completion_tokens, ended.finish_reason) == ("):", 1, "stop")
    # Under a brace language's rule, which no brace ends here, it runs to the limit.
    braced = dataclasses.replace(task, language="js")
    free = model.complete(prompt, [], braced)
    assert free.prompt_tokens == len(model.tokenizer(prompt)["input_ids"])
    assert free.finish_reason == "length" and len(free.text) > 2
    # Stopped at a stop word inside the text: what comes before it, and "stop".
    word = free.text[1:3]
    stopped = model.complete(prompt, ["never said", word], braced)
    assert stopped.text == free.text[:free.text.index(word)]
    assert stopped.finish_reason == "stop" and stopped.completion_tokens < 8


def test_prompt_option_overrides_the_choice(tiny_model: Path, tiny_base_model: Path) -> None:
    assert tiny(tiny_model, prompt="completion").prompt == "completion"
    assert tiny(tiny_model, prompt="auto").prompt == "chat"
    with pytest.raises(ModelLoadError, match="has no chat template.*--humanfix-prompt completion"):
        tiny(tiny_base_model, prompt="chat")
    assert tiny(tiny_model, prompt="primed").prompt == "primed"
    with pytest.raises(ModelLoadError, match="--humanfix-prompt primed.*use --humanfix-prompt "
                                             "completion"):
        tiny(tiny_base_model, prompt="primed")


@pytest.mark.usefixtures("no_outer_cuda")
def test_tiny_model_under_xdist_on_two_devices(humanfix_pytester: pytest.Pytester,
                                               tiny_model: Path, read_records) -> None:
    result = humanfix_pytester.runpytest(
        "--humanfix-model", str(tiny_model), "--humanfix-max", "3", "-n", "2",
        "--humanfix-devices", "0,1", "--humanfix-max-new-tokens", "16", "--humanfix-in-process")
    records = read_records()
    assert len(records) == 3
    # A random model fixes nothing, but every task is scored: no harness error.
    assert all(r["outcome"] in ("fixed", "unfixed") for r in records), \
        [r["error"] for r in records]
    result.assert_outcomes(failed=Counter(r["outcome"] for r in records)["unfixed"],
                           passed=Counter(r["outcome"] for r in records)["fixed"])
    for record in records:
        assert record["tokens"]["prompt"] > 100
        assert 1 <= record["tokens"]["completion"] <= 16
        assert record["attempts"][0]["completion_tokens"] == record["tokens"]["completion"]
        assert record["model_error"] is None
    devices = {r["worker"]: r["device"] for r in records}
    assert sorted(devices) == ["gw0", "gw1"]
    assert sorted(devices.values()) == ["0", "1"]


@pytest.mark.usefixtures("no_outer_cuda")
def test_a_base_model_runs_on_bigcodes_completion_prompt(run_on_a_device, tiny_base_model: Path,
                                                         task, read_records) -> None:
    result = run_on_a_device(
        f"--humanfix-model={tiny_base_model}", "--humanfix-task=Python/0",
        "--humanfix-max-new-tokens=8", "--humanfix-iters=1", "--humanfix-in-process",
        "--humanfix-agent=repair")  # its round is told the first attempt: repair's, named
    (record,) = read_records()
    assert record["outcome"] in ("fixed", "unfixed"), record["error"]
    result.stdout.fnmatch_lines(["*prompt=auto *"])
    assert len(record["attempts"]) == 2
    for attempt in record["attempts"]:
        assert (attempt["prompt"], attempt["engine"]) == ("completion", "transformers")
        assert attempt["finish_reason"] in ("stop", "length")
        assert 1 <= attempt["completion_tokens"] <= 8
        assert attempt["code"].startswith(task.declaration.rstrip())
    # The second prompt is longer by the first attempt and its feedback.
    first, second = (a["prompt_tokens"] for a in record["attempts"])
    assert second > first


@pytest.mark.usefixtures("no_outer_cuda")
def test_a_folder_holding_one_gguf_file_runs_through_the_plugin(
        run_on_a_device, tiny_gguf: Path, read_records) -> None:
    run_on_a_device(f"--humanfix-model={tiny_gguf.parent}", "--humanfix-max=1",
                    "--humanfix-max-new-tokens=8", "--humanfix-in-process")
    (record,) = read_records()
    assert record["outcome"] in ("fixed", "unfixed"), record["error"]
    (attempt,) = record["attempts"]
    assert (attempt["prompt"], attempt["engine"]) == ("chat", "transformers")
    assert attempt["completion_tokens"] >= 1


@pytest.fixture
def weightless_model(tiny_model: Path, tmp_path: Path) -> Path:
    """The tiny model's folder without its weights: it passes the spec check, then cannot load."""
    folder = tmp_path / "weightless"
    shutil.copytree(tiny_model, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    return folder


def test_a_model_that_cannot_load_is_reported_once(humanfix_pytester: pytest.Pytester,
                                                   weightless_model: Path, read_records,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # this run must not pin the test process
    loads = []
    real_init = TransformersModel.__init__

    def counted_init(self, *args):
        loads.append(args)
        real_init(self, *args)

    monkeypatch.setattr(TransformersModel, "__init__", counted_init)
    result = humanfix_pytester.runpytest("--humanfix-model", str(weightless_model),
                                         "--humanfix-max", "3")
    result.assert_outcomes(errors=3)
    assert len(loads) == 1
    records = read_records()
    assert [r["outcome"] for r in records] == ["error"] * 3
    assert "no file named model.safetensors" in records[0]["error"]
    assert all("not retried" in r["error"] for r in records[1:])
    assert len({r["model_error"] for r in records}) == 1
    failed_lines = [line for line in result.stdout.lines if "MODEL LOAD FAILED" in line]
    assert len(failed_lines) == 1
    assert "3 task(s) errored without retrying" in failed_lines[0]
    assert "no file named model.safetensors" in failed_lines[0]


def test_offered_tools_the_in_process_engine_names_the_fix(tiny_model: Path, task) -> None:
    from pytest_humanfix.agent.prompts import run_tests_tool
    from pytest_humanfix.models.base import ModelLoadError
    from pytest_humanfix.models.specs import TOOLS_UNSERVED

    with pytest.raises(ModelLoadError, match="add --humanfix-serve") as raised:
        tiny(tiny_model).generate(MESSAGES, task, tools=[run_tests_tool("tests")])
    assert str(raised.value) == TOOLS_UNSERVED
