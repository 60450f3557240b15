"""Asking ahead (session/ahead.py): the requests sent before their tasks run, at most N
outstanding, each task's once; the reply handed over to the task's own first request when that is
the same Ask; what was not sent cancelled on close, on a task's leaving the queue and on its
request not being taken, and never sent after; which items a process runs next, and which of
their tasks a runner asks for."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from openai_stub import StubServer

from pytest_humanfix.agent.asks import Ask
from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.models.base import Generation, ModelLoadError
from pytest_humanfix.session.ahead import AskAhead, Handover, upcoming, upcoming_tasks
from pytest_humanfix.session.runner import Runner
from pytest_humanfix.session.state import RunState
from pytest_humanfix.settings import Settings


class Model:
    """Answers each request with its prompt's text, once `go` is set; keeps what it was asked."""

    spec, prompt, computed_by = "double", "chat", {}

    def __init__(self, go: bool = True, fails: bool = False) -> None:
        self.asked: list[str] = []
        self.go = threading.Event()
        self.fails = fails
        if go:
            self.go.set()

    def generate(self, messages, task, temperature=None, tools=None, stop=None):
        self.asked.append(messages)
        self.go.wait(10)
        if self.fails:
            raise ModelLoadError("the server at x answered 500")
        return Generation(text=f"reply to {messages}")


def ask(text: str) -> Ask:
    return Ask("generate", {"messages": text, "task": None, "temperature": 0.0})


def asks(*names: str) -> list[tuple[str, object]]:
    return [(name, lambda name=name: ask(name)) for name in names]


def test_at_most_n_are_outstanding_each_task_asked_once_and_in_order():
    model = Model()
    ahead = AskAhead(model, depth=2)
    ahead.ask(asks("a", "b", "c"))
    assert list(ahead.asked) == ["a", "b"]
    handed = ahead.model_for("a", model)
    assert handed.generate(**ask("a").arguments).text == "reply to a"
    ahead.ask(asks("a", "b", "c", "d"))  # a was asked once already; b is outstanding
    assert list(ahead.asked) == ["b", "c"]
    for _, reply in ahead.asked.values():
        reply.result(5)
    assert sorted(model.asked) == ["a", "b", "c"], "each request was sent once"
    ahead.close()


def test_the_same_request_takes_the_reply_another_goes_to_the_model():
    model = Model()
    ahead = AskAhead(model, depth=2)
    ahead.ask(asks("a", "b"))
    ahead.asked["a"][1].result(5)
    same = ahead.model_for("a", model)
    assert isinstance(same, Handover)
    assert same.generate(**ask("a").arguments).text == "reply to a"
    assert same.generate(**ask("a").arguments).text == "reply to a"  # the second goes out
    assert model.asked.count("a") == 2
    other = ahead.model_for("b", model)
    assert other.generate(**ask("b, told otherwise").arguments).text == \
        "reply to b, told otherwise"
    assert ahead.model_for("c", model) is model  # nothing asked ahead for it
    ahead.close()


def test_an_error_asked_ahead_is_the_agents_own_error():
    model = Model(fails=True)
    ahead = AskAhead(model, depth=1)
    ahead.ask(asks("a"))
    with pytest.raises(ModelLoadError, match="answered 500"):
        ahead.model_for("a", model).generate(**ask("a").arguments)
    ahead.close()


def test_closing_cancels_what_was_not_sent_and_the_threads_end():
    model = Model(go=False)
    ahead = AskAhead(model, depth=1)
    ahead.ask(asks("a"))
    handed = ahead.model_for("a", model)  # its thread is in the request, which waits
    ahead.ask(asks("b"))  # queued behind it: not sent
    assert all(thread.daemon for thread in ahead._threads), "an exit never waits for them"
    ahead.close()
    model.go.set()
    for thread in ahead._threads:
        thread.join(5)
        assert not thread.is_alive()
    assert model.asked == ["a"], "what was not sent when the run closed is never sent"
    assert handed.generate(**ask("a").arguments).text == "reply to a"
    ahead.ask(asks("c"))
    assert "c" not in ahead.asked and model.asked == ["a"]


def test_a_request_cancelled_before_it_was_sent_is_sent_by_the_agent():
    model = Model(go=False)
    ahead = AskAhead(model, depth=1)
    ahead.ask(asks("a"))
    ahead.model_for("a", model)
    ahead.ask(asks("b"))
    handed = ahead.model_for("b", model)
    ahead.close()  # b's was queued behind a's, never sent
    model.go.set()
    assert handed.generate(**ask("b").arguments).text == "reply to b"
    assert model.asked == ["a", "b"]


def test_what_was_asked_for_a_task_no_longer_ahead_is_dropped():
    model = Model()
    ahead = AskAhead(model, depth=2)
    ahead.ask(asks("a", "b"))
    ahead.keep({"b", "c"})  # a was taken by another worker
    assert list(ahead.asked) == ["b"]
    ahead.close()


def blocked_with_one_queued() -> tuple[Model, AskAhead]:
    """One thread, busy with a's request (handed over, still waiting for the server), and b's
    queued behind it: asked, not sent."""
    model = Model(go=False)
    ahead = AskAhead(model, depth=1)
    ahead.ask(asks("a"))
    ahead.model_for("a", model)
    ahead.ask(asks("b"))
    return model, ahead


def ended(model: Model, ahead: AskAhead) -> list[str]:
    """What the server was sent, once the server answers and the threads have ended."""
    model.go.set()
    ahead.close()
    for thread in ahead._threads:
        thread.join(5)
        assert not thread.is_alive()
    return model.asked


def test_a_request_dropped_before_it_was_sent_is_never_sent():
    model, ahead = blocked_with_one_queued()
    ahead.keep({"c"})  # b left this worker's queue
    assert ahead.asked == {}
    assert ended(model, ahead) == ["a"]


def test_a_reply_the_task_did_not_take_is_dropped_and_never_sent():
    model, ahead = blocked_with_one_queued()
    handed = ahead.model_for("b", model)
    handed.release()  # the task ended (or asked otherwise) before b's was sent
    assert handed.reply.cancelled()
    assert ended(model, ahead) == ["a"]


def test_a_request_with_positional_arguments_is_never_the_one_asked_ahead():
    model = Model()
    ahead = AskAhead(model, depth=1)
    ahead.ask(asks("a"))
    handed = ahead.model_for("a", model)
    handed.reply.result(5)
    arguments = ask("a").arguments
    reply = handed.generate(arguments["messages"], None, temperature=0.0)
    assert reply.text == "reply to a" and model.asked == ["a", "a"], "asked of the model again"
    ahead.close()


def test_the_tasks_ahead_are_those_of_humanfix_items_in_order(dataset):
    tasks = load_tasks(str(dataset))[:3]
    listed = items(5)
    session = SimpleNamespace(items=listed)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: []))
    for item in listed:
        item.session, item.config = session, config
    listed[1].task, listed[3].task, listed[4].task = tasks[2], tasks[0], tasks[1]
    listed[2].task = "not a task"  # another plugin's item with an attribute of that name
    assert upcoming_tasks(listed[0]) == [tasks[2], tasks[0], tasks[1]]  # type: ignore[arg-type]


def test_a_runner_asks_for_its_tasks_in_order_except_those_resume_reports(dataset):
    tasks = load_tasks(str(dataset))[:4]
    with StubServer() as stub:
        runner = Runner(Settings(model="openai:m", base_url=stub.base_url, ask_ahead=2),
                        RunState("r", resumed={tasks[1].task_id: {}}))  # type: ignore[dict-item]
        runner.model()
        runner.ask_ahead(tasks)
        assert runner._ahead is not None
        assert list(runner._ahead.asked) == [tasks[0].task_id, tasks[2].task_id]
        for _, reply in runner._ahead.asked.values():
            assert reply.result(10).text is not None
        runner.ask_ahead(tasks[2:])  # tasks[0] no longer ahead: another worker took it
        assert list(runner._ahead.asked) == [tasks[2].task_id, tasks[3].task_id]
        runner.close()


def test_only_a_served_model_once_loaded_is_asked_ahead():
    with StubServer() as stub:
        served = Runner(Settings(model="openai:m", base_url=stub.base_url), RunState("r"))
        assert not served.asks_ahead  # not loaded yet
        served.model()
        assert served.asks_ahead
        off = Runner(Settings(model="openai:m", base_url=stub.base_url, ask_ahead=0),
                     RunState("r"))
        off.model()
        assert not off.asks_ahead
    control = Runner(Settings(model="canonical"), RunState("r"))
    control.model()
    assert not control.asks_ahead  # answered in this process: nothing to batch


def items(count: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=f"t{n}") for n in range(count)]


def test_the_items_ahead_are_the_sessions_after_this_one_without_xdist():
    listed = items(4)
    session = SimpleNamespace(items=listed)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: []))
    for item in listed:
        item.session, item.config = session, config
    assert upcoming(listed[1]) == listed[2:]  # type: ignore[arg-type]
    assert upcoming(listed[3]) == []  # type: ignore[arg-type]


class Queue:
    def __init__(self, queued: list[object]) -> None:
        self.queued = queued

    def lock(self):
        class Locked:
            def __enter__(_):
                return self.queued

            def __exit__(_, *exc):
                return None
        return Locked()


class WorkerInteractor:
    """What xdist's worker holds: the next item's index, and a queue of those after it."""

    def __init__(self, next_index: object, queued: list[object]) -> None:
        self.nextitem_index = next_index
        self.torun = Queue(queued)


def test_the_items_ahead_under_xdist_are_the_next_and_the_queued_ones():
    listed = items(6)
    session = SimpleNamespace(items=listed)
    shutdown = object()  # xdist's Marker.SHUTDOWN
    interactor = WorkerInteractor(4, [1, 5, shutdown])
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: [interactor]))
    for item in listed:
        item.session, item.config = session, config
    assert upcoming(listed[0]) == [listed[4], listed[1], listed[5]]  # type: ignore[arg-type]
    interactor.nextitem_index = shutdown
    interactor.torun.queued = []
    assert upcoming(listed[0]) == []  # type: ignore[arg-type]
