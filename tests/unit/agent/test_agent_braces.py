"""Code from the replies of the brace languages (agent/braces.py), as BigCode post-processes a
generation: held against every task of the shared data, whose canonical solutions are replies
of both kinds (a completion that continues the prompt base, a chat block of the whole function)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_humanfix.agent.braces import (
    continued_code,
    declared_name,
    extract_braced,
    remove_last_block,
    whole_function,
)
from pytest_humanfix.dataset import Task, load_tasks
from pytest_humanfix.languages import language

BRACED = ("js", "java", "go", "cpp", "rust")


@pytest.fixture(scope="module")
def tasks(dataset: Path) -> dict[str, list[Task]]:
    return {name: load_tasks(str(dataset.parent / f"humanevalpack-{name}.jsonl"))
            for name in BRACED}


def fence(code: str, tag: str) -> str:
    return f"```{tag}\n{code.rstrip()}\n```\n"


def squeezed(code: str) -> str:
    return " ".join(code.split())


@pytest.mark.parametrize(("name", "cut"), [
    # A canonical solution holding one of the language's stop words is cut there, as BigCode
    # cuts a generation ("\nfunc" before Go/72's helper, "struct" in `map[int]struct{}`).
    ("go", {"Go/72", "Go/90", "Go/158"}),
    # A helper defined after the entry point is past the braces the prompt base opened.
    ("rust", {"Rust/137", "Rust/145"}),
    # The lines after the function (`#undef NDEBUG`) are past them too.
    ("cpp", {"CPP/94"}),
    ("js", set()),
    ("java", set()),  # two braces: the class's and the method's
])
def test_a_canonical_continuation_is_kept_whole_up_to_where_the_function_ends(tasks, name, cut):
    lang = language(name)
    changed = set()
    for task in tasks[name]:
        base = lang.prompt_base(task, "tests")
        program = continued_code(task.canonical_solution, base, lang)
        if program.rstrip() != base.rstrip() + task.canonical_solution.rstrip():
            changed.add(task.task_id)
    assert changed == cut


@pytest.mark.parametrize("name", BRACED)
def test_a_chat_block_of_the_whole_fixed_function_is_the_candidate(tasks, name):
    lang = language(name)
    differs = []
    for task in tasks[name]:
        reply = (f"The bug is fixed below.\n\n{fence(task.buggy_code, lang.fence)}\nFixed:\n\n"
                 f"{fence(task.canonical_code, lang.fence)}main() would print true.\n")
        got = extract_braced(reply, task.entry_point, lang.prompt_base(task, "tests"),
                             task.buggy_code, lang)
        if squeezed(got) != squeezed(task.canonical_code):
            differs.append(task.task_id)
    # CPP/94's canonical code ends with `#undef NDEBUG`, after its function: dropped.
    assert differs == (["CPP/94"] if name == "cpp" else [])


def test_a_chat_block_that_is_only_the_body_goes_after_the_prompt_base(tasks):
    task, lang = tasks["js"][0], language("js")
    base = lang.prompt_base(task, "tests")
    got = extract_braced(fence(task.canonical_solution, "js"), task.entry_point, base,
                         task.buggy_code, lang)
    assert squeezed(got) == squeezed(base + task.canonical_solution)


def test_prose_without_code_leaves_the_prompt_base(tasks):
    task, lang = tasks["go"][0], language("go")
    base = lang.prompt_base(task, "tests")
    assert extract_braced("I cannot see the bug.", task.entry_point, base, task.buggy_code,
                          lang) == base


def test_a_reply_of_only_the_buggy_function_gives_it_back(tasks):
    task, lang = tasks["java"][0], language("java")
    got = extract_braced(fence(task.buggy_code, "java"), task.entry_point,
                         lang.prompt_base(task, "tests"), task.buggy_code, lang)
    assert squeezed(got) == squeezed(task.buggy_code)


def test_main_and_tests_after_the_entry_point_are_dropped_and_helpers_kept():
    block = ("fn helper(x: i32) -> i32 {\n    x + 1\n}\n"
             "fn add_one(x: i32) -> i32 {\n    helper(x)\n}\n"
             "fn twice(x: i32) -> i32 {\n    x * 2\n}\n"
             "fn main() {\n    println!(\"{}\", add_one(1));\n}\n")
    got = whole_function(block, "add_one", language("rust"))
    assert got is not None and "fn twice" in got and "fn helper" in got
    assert "fn main" not in got


def test_a_block_that_only_calls_the_entry_point_declares_nothing():
    assert whole_function("let x = add(1, 2);\nconsole.log(add(3, 4));\n", "add",
                          language("js")) is None


@pytest.mark.parametrize(("last_line", "name"), [
    ("const minSubArraySum = (nums) => {", "minSubArraySum"),
    ("    public int countUpper(String s) {", "countUpper"),
    ("fn correct_bracketing_parenthesis(bkts:&str) -> bool{", "correct_bracketing_parenthesis"),
    ("func Add<T>(x T) T {", "Add"),
])
def test_the_declared_name_is_what_the_prompt_base_declares_last(last_line, name):
    assert declared_name(f"// a comment\n{last_line}\n", "entry_point_of_the_row") == name


def test_remove_last_block_cuts_at_a_stop_word_before_the_closing_brace():
    go = language("go")
    assert remove_last_block("    return 1\n}\nfunc main() {\n}\n", go) == "    return 1\n}"
    assert remove_last_block("    return 1\n// done\n}\n", go) == "    return 1"


def test_java_continuation_that_never_closes_the_class_gets_its_brace():
    java = language("java")
    body = "        return 1;\n    }\n    public static void main(String[] a) {\n    }\n"
    got = remove_last_block(body, java)
    assert "main" not in got and got.count("}") == 2
