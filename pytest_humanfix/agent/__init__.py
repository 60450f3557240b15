"""The repair agent: a LangGraph loop (`graph`) around the model and the sandbox, the prompts it
sends, the check before execution, and the extraction of code from replies (docs/agent.md)."""
