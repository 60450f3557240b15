"""Constructed runs for the page's tests: records with whole trajectories, as many as a full
six-language run with repair rounds holds, and one reply that tries to run script."""

from __future__ import annotations

from typing import Any

LANGUAGES = ("python", "js", "java", "go", "cpp", "rust")
BUG_TYPES = ("missing logic", "operator misuse", "value misuse", "excess logic")
HOSTILE = ("</script><script>document.body.dataset.pwned = 'script'</script>"
           "<img src=x onerror=\"document.body.dataset.pwned = 'img'\">")


def attempt(index: int, passed: bool, reply: str) -> dict[str, Any]:
    return {"reply": reply, "code": f"def f(x):\n    return x + {index}\n",
            "diff": f"--- buggy\n+++ fixed\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n"
                    f"+    return x + {index}\n",
            "status": "passed" if passed else "failed", "check": "", "round": index,
            "verdict": {"status": "passed" if passed else "failed", "exit_code": 0 if passed
                        else 1, "seconds": 0.05, "stdout": "",
                        "stderr": "" if passed else "AssertionError: f(1) == 2"},
            "feedback": "" if passed else "The tests failed: AssertionError: f(1) == 2",
            "prompt_tokens": 120, "completion_tokens": 40, "generate_seconds": 0.5,
            "execute_seconds": 0.05}


def task_record(language: str, number: int, fixed_round: int | None, rounds: int,
                reply: str = "Here is the fixed function.") -> dict[str, Any]:
    """A task fixed in `fixed_round` (None: never, after `rounds` rounds)."""
    last = rounds - 1 if fixed_round is None else fixed_round
    attempts = [attempt(i, i == fixed_round, reply) for i in range(last + 1)]
    prefix = {"js": "JavaScript", "cpp": "CPP"}.get(language, language.capitalize())
    return {"task_id": f"{prefix}/{number}", "entry_point": "f", "language": language,
            "bug_type": BUG_TYPES[number % len(BUG_TYPES)],
            "outcome": "unfixed" if fixed_round is None else "fixed",
            "code": attempts[-1]["code"], "diff": attempts[-1]["diff"],
            "verdict": attempts[-1]["verdict"],
            "failure": "" if fixed_round is not None else "AssertionError: f(1) == 2",
            "error": "", "fixed_round": fixed_round, "final_attempt": len(attempts) - 1,
            "seconds": 0.6 * len(attempts), "attempts": attempts,
            "tokens": {"prompt": 120 * len(attempts), "completion": 40 * len(attempts)},
            "n": 1, "n_fixed": int(fixed_round is not None), "samples": [],
            "flags": ["reads the tests"] if number % 41 == 0 and fixed_round is not None else [],
            "model": "constructed", "protocol": {"iters": rounds - 1, "language": language},
            "dataset": "", "run_id": "r1"}


def full_run(tasks: int = 4 * 164, rounds: int = 4) -> list[dict[str, Any]]:
    """6 x 164 x 4 = 3936 tasks, the size the page must stay usable at: each fixed in round
    `number % (rounds + 1)` (`rounds`: never)."""
    return [task_record(language, number,
                        None if number % (rounds + 1) == rounds else number % (rounds + 1),
                        rounds)
            for language in LANGUAGES for number in range(tasks)]
