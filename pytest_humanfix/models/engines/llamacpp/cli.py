"""The command line of our llama.cpp engine, and its start: the model loaded, the decode thread
started, the HTTP server run until the process is stopped. See docs/models.md,
"llama.cpp on a CPU", for the levers and what they measured.

    python -m pytest_humanfix.models.engines.llamacpp --model FILE.gguf [--parallel N]
        [--n_threads T] [--n_ctx C] [--n_batch B] [--prefix_cache on|off] [--draft K]
        [--draft_ngram N] [--host H] [--port P] [--model_alias NAME] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import threading
from http.server import ThreadingHTTPServer

from .... import computed_by
from .decode import BatchedModel
from .server import handler_for

MODULE = __package__  # what `python -m` runs: this package's __main__


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python -m {MODULE}",
        description="llama.cpp's engine: an OpenAI-compatible server whose parallel slots are "
                    "decoded together, and whose every reply is a function of its prompt alone.")
    parser.add_argument("--model", required=True, help="the .gguf file")
    parser.add_argument("--model_alias", help="the name clients ask for (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--n_threads", type=int, default=1)
    parser.add_argument("--n_threads_batch", type=int,
                        help="accepted for llama_cpp.server's sake; must equal --n_threads, "
                             "since one step may decode one token or several")
    parser.add_argument("--n_ctx", type=int, default=8192, help="tokens per slot")
    # 64: only whole chunks of a shared prefix are reused, and small chunks cost no speed
    # (docs/models.md, "Levers for speed").
    parser.add_argument("--n_batch", type=int, default=64,
                        help="prompt tokens per step: the chunks a prompt is evaluated in")
    parser.add_argument("--parallel", type=int, default=1, help="slots decoded together")
    parser.add_argument("--prefix_cache", choices=("on", "off"), default="on",
                        help="reuse the whole chunks of a prompt's prefix that a free slot "
                             "evaluated last (the reply is the same either way)")
    # Off: on a CPU drafts did not pay, and changed replies (docs/models.md, "Levers for speed").
    parser.add_argument("--draft", type=int, default=0,
                        help="tokens drafted per step from the prompt and reply (greedy "
                             "requests only; 0: none)")
    parser.add_argument("--draft_ngram", type=int, default=3,
                        help="the longest n-gram a draft is looked up by")
    parser.add_argument("--seed", type=int, default=0, help="for requests that name none")
    arguments = parser.parse_args(argv)
    if arguments.n_threads_batch not in (None, arguments.n_threads):
        parser.error("--n_threads_batch must equal --n_threads: a step's thread count would "
                     "otherwise depend on how many slots are busy, and so would its sums")
    if arguments.parallel > 1 and arguments.n_threads > 1:
        parser.error(f"--parallel {arguments.parallel} with --n_threads {arguments.n_threads}: "
                     "slots share a step only on one thread, where a reply does not depend on "
                     "the others in its batch; run one engine per core instead")
    return arguments


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    model = BatchedModel(arguments.model, arguments.n_ctx, arguments.n_threads,
                         arguments.parallel, arguments.n_batch,
                         prefix_cache=arguments.prefix_cache == "on", draft=arguments.draft,
                         draft_ngram=arguments.draft_ngram)
    threading.Thread(target=model.run, name="llama.cpp", daemon=True).start()
    props = {"system_info": model.lc.llama_print_system_info().decode(errors="replace"),
             "computed_by": computed_by.llamacpp(model.lc, arguments.n_threads,
                                                 model.description())}
    server = ThreadingHTTPServer((arguments.host, arguments.port),
                                 handler_for(model, arguments.model_alias or arguments.model,
                                             arguments.seed, props))
    server.daemon_threads = True
    print(f"llama.cpp engine: {arguments.model} on http://{arguments.host}:{arguments.port}/v1, "
          f"{arguments.parallel} slot(s) of {arguments.n_ctx} tokens, {arguments.n_threads} "
          "thread(s)", file=sys.stderr, flush=True)
    server.serve_forever()
