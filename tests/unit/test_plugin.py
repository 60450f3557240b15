"""The plugin's hooks (plugin.py) where no model is named: pytest loads the plugin in every run
of an environment that has it, so there each hook must step aside (a whole run of that kind:
tests/runs/test_plugin_without_a_model.py)."""

from __future__ import annotations

import pytest

from pytest_humanfix import plugin


def test_without_a_model_no_hook_adds_anything(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\naddopts = -p no:randomly\n")
    config = pytester.parseconfigure()
    assert plugin.pytest_xdist_auto_num_workers(config) is None
    assert plugin.pytest_report_header(config) is None
    plugin.pytest_unconfigure(config)  # nothing to close: no error
