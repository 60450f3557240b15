"""The built-in repair agent (`--humanfix-agent repair`) written through the contract, for chat
models and Python: the same prompts, temperatures, stop strings and asks again, so that on the
same model it gives the same replies and outcomes (benchmarks/harness/compare_agents.py checks a
run of each against the other). What it may not do itself, it asks of the context: `run_tests`
checks and runs the code and answers the feedback the built-in agent is told.

    pytest --humanfix-model qwen-coder --humanfix-serve \
        --humanfix-agent examples/agents/repair.py:repair

It reuses the plugin's reading of a reply (`extract_code`) and its test of two codes for the
same program (`same_code`), which any agent may import.
"""

from __future__ import annotations

from pytest_humanfix.agent.extract import extract_code, same_code

# Where a chat reply's code ends (--humanfix-chat-stop code): its first block closed, or a
# `check` of the model's own after the fix.
CODE_END = ["\n```\n", "\ndef check("]


def repair(ctx):
    task, config = ctx.task, ctx.config
    messages = [{"role": "user", "content": task.prompt}]
    stop = CODE_END if config.chat_stop == "code" else []
    ran: list[str] = []  # code that was run: a reply that repeats one is asked for again
    final = None  # the latest code that was not rejected: the one submitted at the end
    for round in range(ctx.rounds + 1):
        resamples = 0
        while True:
            reply = ctx.model.chat(messages, stop=stop,
                                   temperature=config.temperature_of(round, resamples))
            code = extract_code(reply, task.entry_point, task.prompt_base, task.buggy_code)
            repeat = any(same_code(code, earlier) for earlier in ran)
            if not repeat or resamples == config.resamples:
                break
            final, resamples = code, resamples + 1
        result = ctx.run_tests(code)
        if result.status != "rejected":
            final = code
        if result.status in ("passed", "failed"):
            ran.append(code)
        if result.passed or round == ctx.rounds:
            break
        # The attempt stands in the conversation as the function it wrote, fenced.
        said = f"```{task.fence}\n{code.strip()}\n```" if code.strip() else reply
        messages += [{"role": "assistant", "content": said},
                     {"role": "user", "content": result.feedback}]
    return code if final is None else final
