"""Zero cost when idle: pytest loads the plugin in every run of an environment that has it, so
loading it must not pull in the heavy libraries the backends need."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "datasets", "langgraph")


def test_importing_the_plugin_imports_nothing_heavy():
    script = ("import json, sys, pytest_humanfix.plugin; "
              f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == []


def test_a_plain_pytest_run_with_the_plugin_inactive_imports_nothing_heavy(pytester):
    pytester.makeini("[pytest]\naddopts = -p no:randomly\n")
    pytester.makepyfile(f"""
        import sys

        def test_nothing_heavy_is_loaded(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("humanfix")  # installed and loaded
            assert [m for m in {HEAVY!r} if m in sys.modules] == []
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
