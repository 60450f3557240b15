"""Where model-written code runs: the interface (`environment`) beside its implementations (fresh
interpreters, the warm fork server, the bwrap and process layers, cgroups) and `choose`, which
picks them for a run. What each guards against: docs/sandbox.md."""
