"""What the harness starts: our llama.cpp engine (`llamacpp/`) and the engines `--humanfix-serve`
launches (`kinds`, `commands`, `launch`, `serving`). The clients that call them live in
`models/` beside this package. See docs/models.md ("OpenAI-compatible servers and a shared
engine", "llama.cpp on a CPU").
"""
