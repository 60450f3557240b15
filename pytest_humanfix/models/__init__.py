"""Models and engines: a backend-free interface (`base`), spec resolution with lazily imported
backends (`specs`), the backends themselves, and the shared engines of `--humanfix-serve`."""
