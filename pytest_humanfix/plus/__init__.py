"""HumanEvalFix+ (`--humanfix-tests plus`): the final candidate graded on HumanEval+'s inputs as
well, with EvalPlus's comparison and time limits. HumanEvalFix's `Python/N` is HumanEval's
`HumanEval/N` with a bug put in, so a fix can be graded on both. The data (`data`), the program
that grades a candidate (`checker`), EvalPlus's limits (`limits`) and the reading of its verdicts
(`verdicts`) are apart; `known` lists the canonical solutions that fail it. Where and why it
differs from EvalPlus: docs/trust.md#humanevalfix-humanfix-tests-plus.
"""
