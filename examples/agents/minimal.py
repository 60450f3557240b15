"""A minimal agent: ask, run the tests, tell the model what failed, until fixed or out of rounds.

    pytest --humanfix-model qwen-coder --humanfix-serve \
        --humanfix-agent examples/agents/minimal.py:fix
"""

import re


def fix(ctx):
    messages = [{"role": "user", "content": ctx.task.prompt}]
    code = None
    for _ in range(ctx.rounds + 1):
        reply = ctx.model.chat(messages)
        block = re.search(r"```\w*\n(.*?)(?:```|$)", reply, re.S)
        code = block.group(1) if block else reply
        result = ctx.run_tests(code)
        if result.passed:
            break
        messages += [{"role": "assistant", "content": reply},
                     {"role": "user", "content": result.feedback}]
    return code
