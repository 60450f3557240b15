"""A project's own pytest run where the plugin is installed and no model is named: its tests run
as if the plugin were not there (plugin.py steps aside; tests/unit/test_plugin.py calls the
hooks themselves)."""

from __future__ import annotations


def test_a_projects_own_tests_run_untouched_and_the_agent_fixture_is_none(pytester):
    pytester.makeini("[pytest]\naddopts = -p no:randomly\n")
    pytester.makepyfile(test_own="""
        def test_sum():
            assert 1 + 1 == 2

        def test_the_agent_fixture(humanfix_agent):
            assert humanfix_agent is None
        """)
    result = pytester.runpytest_inprocess("-v")
    result.assert_outcomes(passed=2)
    assert not [line for line in result.outlines if line.startswith("humanfix ")]  # header
    assert not (pytester.path / "reports").exists()


def test_the_options_are_declared_even_where_the_plugin_is_idle(pytester):
    result = pytester.runpytest_inprocess("--help")
    assert "--humanfix-model" in result.stdout.str()
