"""Reply extraction on the shapes small chat models really produce.

The replies below are modelled on what Qwen2.5-0.5B-Instruct, Qwen3 (with and without a think
block), deepseek-coder-instruct and SmolLM2-135M-Instruct (50 greedy replies read: half ran to
the token limit repeating themselves, 14 redefined `check` after their fix, 8 held only the
tests) write when asked to fix a HumanEvalFix function; and, at the end, on what a base model
continues BigCode's prompt with.
"""

from __future__ import annotations

import textwrap

import pytest

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.agent.extract import (code_key, continued_code, extract_code,
                                          strip_thinking)
from pytest_humanfix.agent.precheck import check_candidate
from pytest_humanfix.sandbox.fresh import ProcessSandbox
from pytest_humanfix.languages import LANGUAGES

DECLARATION = ("from typing import List\n\n\n"
               "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n")
BUGGY_BODY = """\
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2:
                distance = elem - elem2
                if distance < threshold:
                    return True

    return False
"""
FIXED_BODY = BUGGY_BODY.replace("elem - elem2", "abs(elem - elem2)")
BUGGY = DECLARATION + BUGGY_BODY
FIXED = DECLARATION + FIXED_BODY
FIXED_FUNCTION = FIXED.split("\n\n\n", 1)[1]  # without the import, as models often write it
ENTRY = "has_close_elements"


def extract(reply: str) -> str:
    return extract_code(reply, ENTRY, DECLARATION, BUGGY)


def assert_is_fixed(code: str) -> None:
    assert code_key(code) == code_key(FIXED), code


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```"


def test_qwen25_prose_fix_then_usage_block():
    reply = (f"Here's the corrected version of the `{ENTRY}` function:\n\n{fence(FIXED)}\n\n"
             "Explanation:\n1. The distance must be absolute, so `abs` is used.\n\n"
             + fence(f"# Test cases\nprint({ENTRY}([1.0, 2.0, 3.0], 0.5))  # False\n"))
    assert_is_fixed(extract(reply))


def test_qwen3_think_block_is_dropped_even_when_it_holds_code():
    reply = (f"<think>\nThe user wants me to fix it. Maybe:\ndef {ENTRY}(numbers, threshold):\n"
             f"    return False\nNo, the real bug is the missing abs.\n</think>\n\n{fence(FIXED)}")
    assert_is_fixed(extract(reply))


def test_qwen3_reply_with_only_the_closing_think_tag():
    # The chat template opened <think> in the prompt, so the reply starts inside it.
    reply = f"I should use abs here.\n</think>\n\n{fence(FIXED)}"
    assert strip_thinking(reply).strip().startswith("```python")
    assert_is_fixed(extract(reply))


def test_unterminated_think_block_leaves_no_code_from_the_reasoning():
    reply = f"<think>\nLet me think. def {ENTRY}(numbers, threshold): return True"
    assert strip_thinking(reply) == ""


def test_deepseek_prose_and_block_with_main_guard_and_check_calls():
    block = (FIXED + "\n\ndef check(has_close_elements):\n"
             "    assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n\n"
             "check(has_close_elements)\n\n"
             "if __name__ == \"__main__\":\n"
             f"    print({ENTRY}([1.0, 2.0], 0.5))\n")
    reply = ("The bug is in the distance computation: it can be negative. "
             "Here is the corrected code:\n\n" + fence(block) + "\n\nThis passes all the tests.")
    code = extract(reply)
    assert_is_fixed(code)
    assert "check" not in code and "__main__" not in code


def test_echoed_asserts_and_result_assignments_are_dropped():
    block = (FIXED + f"\nresult = {ENTRY}([1.0, 2.0], 0.5)\nprint(result)\n"
             f"assert {ENTRY}([1.0, 2.8, 3.0], 0.3) == True\n")
    assert_is_fixed(extract(fence(block)))


def test_body_only_fenced_with_its_indentation():
    code = extract("The fix:\n" + fence(FIXED_BODY))
    assert_is_fixed(code)


def test_body_only_dedented():
    code = extract(fence(textwrap.dedent(FIXED_BODY)))
    assert_is_fixed(code)


def test_body_whose_first_line_lost_its_indentation():
    body = FIXED_BODY.lstrip()
    assert body.startswith("for idx") and "\n        for idx2" in body
    assert_is_fixed(extract(fence(body)))


def test_body_only_stops_at_the_first_unindented_line_as_bigcode_does():
    reply = fence(FIXED_BODY + f"\nprint({ENTRY}([1.0], 0.5))\n")
    assert_is_fixed(extract(reply))


def test_body_completed_from_the_docstring_prompt_in_the_docs_variant():
    prompt = DECLARATION + '    """ Check if any two numbers are closer than threshold. """\n'
    code = extract_code(fence(FIXED_BODY), ENTRY, prompt, BUGGY)
    assert code.startswith(prompt)
    assert check_candidate(code, _task()) == ""


def test_unterminated_fence_with_a_complete_function():
    assert_is_fixed(extract("Here you go:\n```python\n" + FIXED))


@pytest.mark.parametrize("after", ["\n\nThe distance must be absolute.\n",
                                   f"\n\ndef check({ENTRY}):\n    assert {ENTRY}([], 1) is False\n"])
def test_a_reply_cut_where_its_code_ends_gives_the_code_of_the_whole_reply(after):
    """--humanfix-chat-stop cuts a reply before `\n```\n` or a `\ndef check(` of its own (the
    stop string and all, as a server returns it): the block is left open, its last line
    unended, and the code is byte for byte the whole reply's."""
    from pytest_humanfix.agent.prompts import chat_stop
    from pytest_humanfix.models.base import cut_at_stop

    whole = "Here it is:\n\n```python\n" + FIXED + ("```" + after if "check" not in after
                                                  else after.lstrip("\n") + "```\n")
    stops = chat_stop("code", _task())
    cut = cut_at_stop(whole, stops)
    assert len(cut) < len(whole) and not cut.endswith("\n")
    assert extract(cut) == extract(whole)
    assert_is_fixed(extract(cut))


def test_unterminated_fence_cut_mid_function_fails_the_check_with_a_syntax_error():
    cut = FIXED[: FIXED.index("if distance")] + "if distance <"
    code = extract("```python\n" + cut)
    assert check_candidate(code, _task()).startswith("syntax error")


def test_buggy_then_fixed_blocks_take_the_fix():
    reply = (f"The original code:\n{fence(BUGGY)}\nThe bug: no abs. Fixed code:\n{fence(FIXED)}")
    assert_is_fixed(extract(reply))


def test_fixed_then_quoted_original_still_takes_the_fix():
    reply = (f"Corrected:\n{fence(FIXED)}\nFor comparison, the original was:\n{fence(BUGGY)}")
    assert_is_fixed(extract(reply))


def test_several_blocks_take_the_one_defining_the_entry_point():
    reply = (fence("pip install numpy\n", "bash") + "\n" + fence(FIXED) + "\n"
             + fence(f">>> {ENTRY}([1.0, 2.0], 0.5)\nFalse\n", ""))
    assert_is_fixed(extract(reply))


def test_bare_code_between_prose():
    reply = (f"Sure! The problem is the sign of the distance.\n\n{FIXED}\n"
             "This version uses abs so the order of the elements does not matter.\n")
    assert_is_fixed(extract(reply))


def test_bare_code_followed_by_doctest_lines():
    reply = FIXED + f"\n>>> {ENTRY}([1.0, 2.0, 3.0], 0.5)\nFalse\n"
    assert_is_fixed(extract(reply))


def test_fence_inside_a_markdown_list_is_dedented():
    indented = "\n".join("   " + line if line else "" for line in fence(FIXED).splitlines())
    assert_is_fixed(extract("1. Use abs:\n\n" + indented + "\n"))


def test_helpers_and_imports_in_the_reply_are_kept():
    block = ("import math\n\n\ndef _distance(a, b):\n    return math.fabs(a - b)\n\n\n"
             f"def {ENTRY}(numbers, threshold):\n"
             "    return any(_distance(a, b) < threshold\n"
             "               for i, a in enumerate(numbers) for j, b in enumerate(numbers) if i != j)\n")
    code = extract(fence(block))
    assert "import math" in code and "def _distance" in code
    assert check_candidate(code, _task()) == ""


@pytest.mark.parametrize("indent", ["  ", "\t"])
def test_whole_function_with_other_indentation(indent):
    function = FIXED_FUNCTION.replace("    ", indent)
    assert code_key(extract(fence(function))) == code_key(FIXED)


def test_missing_import_of_the_declaration_is_put_back():
    code = extract(fence(FIXED_FUNCTION))
    assert code.startswith("from typing import List")
    assert_is_fixed(code)


def test_declared_helper_is_restored_and_the_fix_passes(dataset):
    """Python/10 declares `is_palindrome` before the entry point; a reply with only
    `make_palindrome` must still run against the tests."""
    task = next(t for t in load_tasks(str(dataset)) if t.task_id == "Python/10")
    function = task.canonical_code[task.canonical_code.index("def make_palindrome"):]
    code = extract_code(fence(function), task.entry_point, task.declaration, task.buggy_code)
    assert "def is_palindrome" in code
    verdict = ProcessSandbox().run(LANGUAGES["python"].job(code, task.test, task))
    assert verdict.passed, verdict.stderr


def _task():
    from pytest_humanfix.dataset import Task

    return Task(task_id="Python/0", entry_point=ENTRY, bug_type="missing logic", prompt=DECLARATION,
                declaration=DECLARATION, buggy_solution=BUGGY_BODY, canonical_solution=FIXED_BODY,
                test="")


@pytest.mark.parametrize("code, reason", [
    (FIXED.replace("def has_close_elements", "def close_elements"), "does not define"),
    (FIXED.replace("def has_close", "async def has_close"), "async def"),
    (FIXED.replace("threshold: float)", "threshold: float, strict)"), "does not match"),
    (FIXED.replace("numbers: List[float], threshold: float", "numbers"), "does not match"),
])
def test_check_rejects_what_the_tests_cannot_call(code, reason):
    assert reason in check_candidate(code, _task())


@pytest.mark.parametrize("code", [
    FIXED.replace("threshold: float)", "threshold: float, strict=False)"),
    FIXED.replace("numbers: List[float], threshold: float", "nums, eps"),
    FIXED.replace("numbers: List[float], threshold: float", "*args"),
])
def test_check_accepts_compatible_signatures(code):
    assert check_candidate(code, _task()) == ""


@pytest.mark.parametrize("variant", ["tests", "docs"])
def test_every_canonical_solution_survives_extraction_and_the_check(dataset, variant):
    """Replying with the known fix, as a chat model would, must never be rejected or altered."""
    from pytest_humanfix.agent.prompts import prompt_base

    for task in load_tasks(str(dataset)):
        base = prompt_base(task, variant)
        for reply in (fence(task.canonical_code), fence(task.canonical_solution)):
            code = extract_code("Fixed:\n" + reply, task.entry_point, base, task.buggy_code)
            assert check_candidate(code, task) == "", task.task_id
            assert code_key(code) == code_key(base + task.canonical_solution) or \
                code_key(code) == code_key(task.canonical_code), task.task_id



# --- shapes from SmolLM2-135M-Instruct (greedy, tests variant, 512 new tokens) --------------

def indent(code: str) -> str:
    return textwrap.indent(code, "    ")


ECHOED_ASSERTS = (f"assert {ENTRY}([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n"
                  f"assert {ENTRY}([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True\n")


@pytest.mark.parametrize("reply", [
    # Prose, then the tests' asserts as the only block.
    "You can use assert statements to check the function.\n\n" + fence(ECHOED_ASSERTS)
    + "\nThis raises an error if the function is wrong.",
    # Only a `check` of its own, calling the function.
    fence(f"def check({ENTRY}):\n    return {ENTRY}([1.0, 2.0], 0.5) == False\n")
    + "\nThis returns True if the function works.",
    # A `check` with asserts, then a call of it.
    fence("def check(candidate):\n" + indent(ECHOED_ASSERTS.replace(ENTRY, "candidate"))
          + f"\ncheck({ENTRY})\n"),
    # The asserts, bare.
    ECHOED_ASSERTS,
    # A bare `check`, then the instruction repeated as prose.
    f"def check({ENTRY}):\n" + indent(ECHOED_ASSERTS) + f"\nFix bugs in {ENTRY}.",
    # A `check` whose asserts run on until the token limit cuts the last one.
    f"def check({ENTRY}):\n" + indent(ECHOED_ASSERTS * 20) + f"\nassert {ENTRY}([1.0, 2.",
])
def test_a_reply_holding_only_the_tests_holds_no_code(reply):
    # Neither a fix nor a body of one: the prompt base alone, which the check rejects as empty.
    assert extract(reply) == DECLARATION


def test_a_fix_beside_a_block_of_echoed_asserts_is_taken():
    assert_is_fixed(extract(f"Fixed:\n\n{FIXED}\nTry it:\n{fence(ECHOED_ASSERTS)}"))


def test_a_fix_then_its_own_check_then_a_broken_copy_takes_the_fix():
    broken = FIXED_FUNCTION.replace("threshold: float) -> bool:", "threshold: float) -> bool):")
    block = (FIXED_FUNCTION + f"\ndef check({ENTRY}):\n" + indent(ECHOED_ASSERTS) + "\n"
             + broken)
    code = extract("Here is how:\n\n" + fence(block) + "\nThe check makes sure it works.")
    assert_is_fixed(code)
    assert "def check" not in code


def test_a_definition_repeated_until_the_token_limit_keeps_the_first_complete_one():
    drifted = FIXED_FUNCTION.replace("abs(elem - elem2)", "abs(elem - elem2) * 2")
    cut = f"def {ENTRY}(numbers: List[float], threshold: float) -> bool:\n    return [\n" \
          "        '((()" + "()" * 200
    # BigCode would stop at the second "\ndef": the first copy is the answer.
    assert_is_fixed(extract("```python\n" + FIXED_FUNCTION + "\n" + drifted + "\n" + cut))


def test_a_fix_then_asserts_repeated_until_the_token_limit():
    asserts = f"    assert {ENTRY}([1.0, 2.0, 3.0], 0.5) == False\n" * 30
    reply = "```python\n" + FIXED + f"\ndef check({ENTRY}):\n" + asserts + "    assert has_cl"
    code = extract(reply)
    assert_is_fixed(code)
    assert "check" not in code


def test_a_fix_then_a_sentence_repeated_until_the_token_limit():
    reply = (fence(FIXED_FUNCTION) + "\n\nThe original function loops forever.\n"
             + "\nThe original function will run until it is stopped." * 40)
    assert_is_fixed(extract(reply))

# --- completions (a base model continuing BigCode's prompt, or a primed chat answer) -------

@pytest.mark.parametrize("after", [
    "\n\ndef check(candidate):\n    assert candidate([1.0], 0.5) is False\n",  # stop word
    f"\n\nprint({ENTRY}([1.0, 2.0], 0.5))\n",                                    # stop word
    "\n\nThe bug was the missing abs.\n",                     # an unindented line ends it
    f"\n\n\n\n{ENTRY}([1.0], 0.5)\n",
    "\n```\n\nThe bug was the missing abs.\n",   # a primed chat answer closes its fence
])
def test_a_continuation_is_cut_as_bigcode_cuts_it(after):
    code = continued_code("\n" + FIXED_BODY + after, DECLARATION)
    assert code.startswith(DECLARATION.rstrip() + "\n    for idx")
    assert_is_fixed(code)
    assert after.strip().splitlines()[0] not in code


def test_a_continuation_may_go_on_on_the_declarations_line():
    """Qwen2.5-Coder, primed with the declaration, often begins with a comment after its colon."""
    code = continued_code("  # Corrected\n" + FIXED_BODY + "\n```\n", DECLARATION)
    assert code == DECLARATION.rstrip() + "  # Corrected\n" + FIXED_BODY
    assert_is_fixed(code)


def test_a_continuation_keeps_its_nested_definitions_and_comments():
    body = ("    # the distance must not depend on the order\n"
            "    def gap(a, b):\n        return abs(a - b)\n" + FIXED_BODY)
    code = continued_code("\n" + body, DECLARATION)
    assert code == DECLARATION.rstrip() + "\n" + body.rstrip()
