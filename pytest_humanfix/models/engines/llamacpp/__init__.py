"""Our llama.cpp engine: an OpenAI-compatible server whose parallel slots are decoded together,
and whose every reply is a function of its prompt alone: `jobs` (a request in flight),
`decode` (the slots and the decode loop), `chat` (the prompt's layout), `protocol` (OpenAI's
request fields and answer), `server` (HTTP), `cli` (the command line, run as
`python -m pytest_humanfix.models.engines.llamacpp`). Why it is built so, and what was
measured: docs/models.md, "llama.cpp on a CPU".
"""
