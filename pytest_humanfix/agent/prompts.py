"""What the model is told: the HumanEvalPack repair prompts and the agent's feedback turns.

The first turn follows bigcode-evaluation-harness (`HumanEvalFixBase.get_prompt`, `instruct`):
the prompt base and the buggy code (and the tests, in the `tests` variant), then `Fix bugs in
<entry point>.`. How the answer begins, and how repair rounds go on, depends on the prompt kind
(`chat`, `primed`, `completion`; docs/agent.md#prompts-chat-primed-completion). The
function-calling agent's tool (`RUN_TESTS`) and its answers (`tool_result`) are here too
(docs/agent.md#the-function-calling-agent).
"""

from __future__ import annotations

from ..dataset import Task
from ..languages import LANGUAGES
from ..models.base import Message, PromptKind
from ..models.toolcalls import Tool

VARIANTS = ("tests", "docs")
# BigCode's stop words for Python (LANGUAGE_TO_STOP_WORDS, and the end-of-text token it adds).
STOP_WORDS = list(LANGUAGES["python"].stop_words)


def prompt_base(task: Task, variant: str) -> str:
    """The code the model's answer continues: BigCode's `get_prompt_base` (for Rust, with
    `fn main(){}` before the declaration)."""
    return LANGUAGES[task.language].prompt_base(task, variant)


def stop_words(task: Task) -> list[str]:
    return list(LANGUAGES[task.language].stop_words)


# Where a chat reply's code ends: its first code block closed, or, in Python, a `check` of the
# model's own defined after the fix (the tests variant shows the model `def check(...)`, which it
# often writes out again, asserts and all, until its token limit). What comes after is prose or
# tests that `extract.extract_code` drops, so cutting it there changes no graded outcome and
# saves tokens (measured: docs/agent.md#reply-extraction, "Where a chat reply ends"). A bare
# fence line opening a block would end the reply before its code; the models read here open
# theirs with a tag (```python).
CODE_END = "\n```\n"
TESTS_START = {"python": "\ndef check("}


def chat_stop(chat_stop: str, task: Task) -> list[str]:
    """The stop strings of a chat reply under --humanfix-chat-stop."""
    if chat_stop == "none":
        return []
    return [CODE_END, *([TESTS_START[task.language]] if task.language in TESTS_START else [])]


def instruction(task: Task) -> str:
    return f"Fix bugs in {task.entry_point}."


def answer_start(task: Task, variant: str) -> str:
    """How a primed answer begins: the prompt base with its last newline stripped, as BigCode
    strips its whole prompt: the model then writes that newline with the indentation after it,
    as one token, the way code it learnt from is tokenized."""
    return prompt_base(task, variant).rstrip()


def task_context(task: Task, variant: str, code: str) -> str:
    """What a first prompt shows before its ask: the prompt base, then `code`, then in the
    `tests` variant the tests, the source of ground truth the model may read."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    context = prompt_base(task, variant) + code
    return context + "\n" + task.test if variant == "tests" else context


def first_prompt(task: Task, variant: str) -> str:
    return (task_context(task, variant, task.buggy_solution) + "\n" + instruction(task)).strip()


def first_messages(task: Task, variant: str) -> list[Message]:
    return [{"role": "user", "content": first_prompt(task, variant)}]


def rewrite_prompt(task: Task, variant: str) -> str:
    """The first prompt without the buggy code: the prompt base (the declaration, or with its
    docstring in the `docs` variant) and, in the `tests` variant, the tests, then an ask to
    write the function anew. The model is never shown code it could copy."""
    passes = " so that it passes the tests" if variant == "tests" else ""
    return (task_context(task, variant, "") + "\n"
            + f"Implement {task.entry_point}{passes}.").strip()


RUN_TESTS = "run_tests"


def run_tests_tool(variant: str) -> Tool:
    """The tool of the function-calling agent, as OpenAI's API declares a function."""
    which = "the examples from the docstring" if variant == "docs" else "the tests"
    return {"type": "function", "function": {
        "name": RUN_TESTS,
        "description": f"Runs a version of the function on {which} and says what failed, "
                       "with the values compared, or that they passed.",
        "parameters": {"type": "object", "required": ["code"], "properties": {"code": {
            "type": "string",
            "description": "the complete corrected function, with the imports it needs"}}}}}


def first_tool_messages(task: Task, variant: str) -> list[Message]:
    """The first turn of the function-calling agent: the repair prompt, and the tool to use."""
    return [{"role": "user", "content": first_prompt(task, variant)
             + f" Call {RUN_TESTS} with the complete corrected function to test it."}]


def tool_result(status: str, detail: str, example_only: bool) -> str:
    """The tool's answer to a call whose code was run and failed (`status` failed), was not run
    (rejected: `detail` says why), or repeats code that failed (repeat: `detail` is how)."""
    if status == "rejected":
        said = f"Not run: {detail}"
    elif status == "repeat":
        said = "Not run: the code is the same as an earlier call, which failed:\n" + detail
    else:
        which = "the examples from the docstring" if example_only else "the tests"
        said = f"The code fails {which}:\n{detail}"
    return said.strip() + f"\n\nChange the code and call {RUN_TESTS} again."


def completion_prompt(messages: list[Message], base: str) -> str:
    """The conversation as one text for a model that continues text: the turns one after the
    other, then the prompt base. For the first turn alone this is BigCode's `instruct` prompt;
    after it, each attempt is the whole function it produced and each user turn the feedback."""
    return ("\n\n".join(message["content"] for message in messages) + "\n\n" + base).strip()


def attempt_turn(task: Task, code: str, reply: str, prompt: PromptKind) -> str:
    """How an attempt stands in the conversation after it: the function it produced, not the
    whole reply (whose prose and tests echoed back only lengthen every later prompt). A
    completion or primed model's turn is the function it continued, prompt base included and
    unfenced, as it wrote it; a chat reply with no code in it stays as it was said."""
    if prompt != "chat":
        return code.strip()
    if not code.strip():
        return reply
    fence = LANGUAGES[task.language].fence
    return f"```{fence}\n{code.strip()}\n```"


def _ask_again(task: Task, prompt: PromptKind) -> str:
    if prompt != "chat":  # the prompt base follows: the model continues the function
        return instruction(task)
    fence = LANGUAGES[task.language].fence
    return (f"{instruction(task)} Reply with the complete corrected function "
            f"`{task.signature or task.entry_point}` in one ```{fence} block.")


def failure_feedback(task: Task, failure: str, example_only: bool,
                     prompt: PromptKind) -> str:
    which = "the examples from the docstring" if example_only else "the tests"
    return f"Your code does not pass {which}:\n{failure.strip()}\n\n{_ask_again(task, prompt)}"


def rejection_feedback(task: Task, reason: str, prompt: PromptKind) -> str:
    return f"Your code was not run: {reason}\n\n{_ask_again(task, prompt)}"


def repeat_feedback(task: Task, earlier: int, earlier_failure: str,
                    prompt: PromptKind) -> str:
    """For a reply whose code is the same as attempt number `earlier` (1-based)."""
    said = f"; it failed with:\n{earlier_failure.strip()}" if earlier_failure.strip() else ""
    return (f"Your code is the same as your attempt {earlier}, which did not fix the bug{said}\n\n"
            f"Change the code. {_ask_again(task, prompt)}")
