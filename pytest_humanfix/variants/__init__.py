"""Variants that change a task's tests before the model sees them: `--humanfix-variant
impossible`, whose visible tests no correct function passes, so that any pass is a cheat
(impossible.py; docs/trust.md#the-cheating-rate)."""
