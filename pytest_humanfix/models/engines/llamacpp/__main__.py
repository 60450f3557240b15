"""`python -m pytest_humanfix.models.engines.llamacpp`: our llama.cpp engine (`cli`)."""

from .cli import main

main()
