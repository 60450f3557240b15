"""Asking ahead (--humanfix-ask-ahead): while a task runs, its process sends the first requests
of the tasks it runs next to the OpenAI-compatible server, so that the engine batches them with
the task at hand's instead of waiting between one worker's sandbox runs. The request is the
task's own (agent.graph.first_ask, made by the functions the agent's first node uses), sent once,
and its reply handed to the agent's first request when that is the same Ask (`Handover`): the
replies do not change. At most N such requests are outstanding per process, each on a daemon
thread of its own, so that a run interrupted while they wait ends at once
(docs/models.md, "Asking ahead").
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from typing import Any

import pytest

from ..agent.asks import Ask
from ..dataset import Task
from ..models.base import Generation, Model

# A request a thread takes from the queue, or None: the thread ends.
Queued = tuple[Ask, "Future[Generation]"] | None


def upcoming(item: pytest.Item) -> list[pytest.Item]:
    """The items this process runs after `item`, as far as it knows them: under xdist the next
    item and those queued behind it (its WorkerInteractor's queue, read under the queue's own
    lock, as xdist's `steal` reads it), else the session's items after it."""
    session = item.session
    interactor = next((plugin for plugin in item.config.pluginmanager.get_plugins()
                       if type(plugin).__name__ == "WorkerInteractor"), None)
    if interactor is None:
        items = session.items
        at = _position(session, item)
        return items[at + 1:] if at is not None else []
    next_index = getattr(interactor, "nextitem_index", None)
    torun = getattr(interactor, "torun", None)
    indices = [next_index]
    if torun is not None and hasattr(torun, "lock"):
        with torun.lock() as queued:
            indices += list(queued)
    return [session.items[i] for i in indices if isinstance(i, int) and i < len(session.items)]


def upcoming_tasks(item: pytest.Item) -> list[Task]:
    """The tasks of the humanfix items `upcoming`, in order."""
    # By attribute, as plugin.py finds its items (pytester may import the items module anew).
    return [task for later in upcoming(item)
            if isinstance(task := getattr(later, "task", None), Task)]


def _position(session: pytest.Session, item: pytest.Item) -> int | None:
    positions: dict[str, int] | None = getattr(session, "_humanfix_positions", None)
    if positions is None or len(positions) != len(session.items):
        positions = {it.nodeid: at for at, it in enumerate(session.items)}
        session._humanfix_positions = positions  # type: ignore[attr-defined]
    return positions.get(item.nodeid)


class AskAhead:
    """The requests asked ahead by one process, by task id, and the threads that send them.
    `depth` bounds the requests outstanding: asked and not yet handed over."""

    def __init__(self, model: Model, depth: int) -> None:
        self.model = model
        self.depth = depth
        self.asked: dict[str, tuple[Ask, Future[Generation]]] = {}
        self._seen: set[str] = set()  # every task asked once: a rerun asks for itself
        self._queue: queue.SimpleQueue[Queued] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._send, name=f"humanfix-ask-ahead-{n}",
                                          daemon=True) for n in range(depth)]
        self._closed = False
        for thread in self._threads:
            thread.start()

    def ask(self, tasks: Sequence[tuple[str, Callable[[], Ask]]]) -> None:
        """Sends the request of each (task id, its Ask) in order, once per task, while fewer
        than `depth` are outstanding."""
        for task_id, make in tasks:
            if self._closed or len(self.asked) >= self.depth:
                return
            if task_id in self._seen:
                continue
            self._seen.add(task_id)
            ask = make()
            future: Future[Generation] = Future()
            self.asked[task_id] = (ask, future)
            self._queue.put((ask, future))

    def keep(self, task_ids: set[str]) -> None:
        """Drops what was asked for a task not among `task_ids`: one that will not run here
        after all (xdist's work stealing took it, the session stops)."""
        for task_id in [t for t in self.asked if t not in task_ids]:
            self.asked.pop(task_id)[1].cancel()

    def _send(self) -> None:
        while (queued := self._queue.get()) is not None:
            ask, future = queued
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(ask.send(self.model))
            except BaseException as exc:  # the agent's own request raises it, when handed over
                future.set_exception(exc)

    def model_for(self, task_id: str, model: Model) -> Model:
        """`model` for the task's first sample: its first request answered by the reply asked
        ahead, when one was; `release` drops what the sample did not take."""
        taken = self.asked.pop(task_id, None)
        return model if taken is None else Handover(model, *taken)

    def close(self) -> None:
        """Cancels what no thread has sent yet and lets the threads end; a request in flight
        is left to end with its thread (a daemon: the process does not wait for it)."""
        self._closed = True
        for _, future in self.asked.values():
            future.cancel()
        self.asked.clear()
        for _ in self._threads:
            self._queue.put(None)


class Handover:
    """A task's model whose first request, when it is the Ask sent ahead, is answered by that
    request's reply (or raises its error); any other request, and every later one, goes to
    the model, and the reply asked ahead is dropped."""

    def __init__(self, model: Model, ask: Ask, reply: Future[Generation]) -> None:
        self.model = model
        self.ask: Ask | None = ask
        self.reply = reply
        self.spec, self.prompt = model.spec, model.prompt

    def _answer(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Generation:
        ask, self.ask = self.ask, None
        if ask is not None and not args and Ask(method, kwargs) == ask:  # type: ignore[arg-type]
            try:
                return self.reply.result()
            except CancelledError:
                pass  # closed before it was sent: asked now
        else:
            self.release()
        answer: Callable[..., Generation] = getattr(self.model, method)
        return answer(*args, **kwargs)

    def generate(self, *args: Any, **kwargs: Any) -> Generation:
        return self._answer("generate", args, kwargs)

    def complete(self, *args: Any, **kwargs: Any) -> Generation:
        return self._answer("complete", args, kwargs)

    def continue_answer(self, *args: Any, **kwargs: Any) -> Generation:
        return self._answer("continue_answer", args, kwargs)

    def release(self) -> None:
        self.ask = None
        self.reply.cancel()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)
