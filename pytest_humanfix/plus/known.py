"""HumanEvalFix's canonical solutions that fail HumanEval+: counted apart, shown, never in
pass@1+ (each one and why: docs/trust.md#humanevalfix-humanfix-tests-plus)."""

from __future__ import annotations

# Found by the canonical control with --humanfix-tests plus (tests/test_plus.py checks the list
# is what the data gives): wrong outputs, solutions far too slow on any machine, and two near
# their input's limit that pass or time out with the machine's load. Those two stay listed
# whatever their verdict, so pass@1+ is over the same tasks on every machine. Every other
# canonical solution is well within its limits; the timings behind each:
# docs/trust.md#humanevalfix-humanfix-tests-plus.
SLOW = "too slow: an input runs past its limit, 4 s of CPU, and again when re-run: "
NEAR_LIMIT = ("near its limit: one input takes about its limit, 4 s of CPU, where EvalPlus's "
              "reference takes milliseconds, so it times out on a busy or slow machine and may "
              "pass on a quiet or fast one: ")
PLUS_KNOWN_FAILURES: dict[str, str] = {
    "Python/22": "keeps bools as integers: filter_integers([True, False, None, 0, ...]) "
                 "returns [True, False, 0, -10], HumanEval+ expects [0, -10]",
    "Python/31": NEAR_LIMIT + "is_prime(123456791), input 137 of 159, takes ~3.4 s on a quiet "
                 "2-core machine and 5-7 s beside a busy one: trial division up to n",
    "Python/32": "find_zero([9450000, 9, -7, ...]) returns 5.8984893224, outside EvalPlus's "
                 "oracle |poly(x)| <= 1e-4",
    "Python/39": NEAR_LIMIT + "prime_fib(12), input 12 of 12, takes ~8 s on a quiet 2-core "
                 "machine and 15 s beside a busy one: trial division of 99194853094755497 up to "
                 "its square root",
    "Python/44": "change_base(0, 3) returns '', HumanEval+ expects '0'",
    "Python/49": "modp(0, 1) returns 1, HumanEval+ expects 0 (input 605 of 989; its loop of n "
                 "doublings takes 0.07 s at most on an input)",
    "Python/55": SLOW + "fib(63), input 14 of 45, would take hours where EvalPlus's reference "
                 "takes milliseconds: fib recurses without memo, exponential in n",
    "Python/63": SLOW + "fibfib(57), input 16 of 65, would take hours where EvalPlus's "
                 "reference takes milliseconds: fibfib recurses without memo, exponential in n",
    "Python/64": "vowels_count raises IndexError (string index out of range) on a HumanEval+ "
                 "input",
    "Python/76": "is_simple_power(-2, -2) returns False, HumanEval+ expects True",
    "Python/91": "is_bored(' I am wearing a blue shirt today. ...') returns 3, HumanEval+ "
                 "expects 4",
    "Python/95": "check_dict_case({'FIRST_NAME': 'John', ..., '1': 35}) returns True, "
                 "HumanEval+ expects False",
    "Python/97": "multiply(-6, -9) returns 4: Python's % of a negative, HumanEval+ expects 54",
    "Python/111": "histogram('a b c  d ...') counts the empty word between two spaces",
    "Python/122": "add_elements([-99, -88, ..., -11], 5) returns 0, HumanEval+ expects -385",
    "Python/123": "get_odd_collatz(9999999999999999999999999999999999) returns another "
                  "sequence than HumanEval+ expects",
    "Python/124": "valid_date('12-31-1999') returns False, HumanEval+ expects True",
    "Python/125": "split_words('as,words,,a') drops the empty word, HumanEval+ keeps it",
    "Python/127": SLOW + "intersection([-1000000001, 20], [-1000000001, 20]), input 436 of "
                  "587, takes over 30 s where EvalPlus's reference takes milliseconds: the "
                  "length, 1000000021, tested for primality by trial division up to itself (on "
                  "a busy machine input 414, of length 100000007, ~5 s, is stopped first)",
    "Python/132": "is_nested('[][][]') returns True, HumanEval+ expects False",
    "Python/140": "fix_spaces('  spaces  every  where  ') ends in '_', HumanEval+ expects '__'",
    "Python/150": "x_or_y(-2, 0, 1) returns 0, HumanEval+ expects 1",
}
