"""What a run reports: the one summary (`summary.build`) and its renderings (terminal, files,
chart), the statistics behind it, the CI gates, and the `humanfix-report` command."""
