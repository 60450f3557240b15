"""What a run reports: the one summary (`summary.build`, typed by `sections`, pass@1 from
`rates`) and its renderings (terminal, files, chart, JUnit, pytest-html), the statistics behind
it, the CI gates, and the `humanfix-report` command (docs/reports.md)."""
