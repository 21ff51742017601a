"""An rclpy executor whose wait set is built once per change of its nodes' entities (issue 17).

rclpy's ``SingleThreadedExecutor`` builds a new ``rcl`` wait set before every wait: it walks every node's
subscriptions, timers, services, guard conditions and QoS event handlers, enters each handle, counts them,
allocates the wait set and adds them all, then wraps each ready callback in a ``Task`` around a coroutine and
triggers its own guard condition twice per callback, which makes the next wait return at once and rebuild again.
In the simulated-clock capture graph that was 65-90 % of each node's CPU (docs/performance.md, "Where the graph's
CPU goes on the simulated clock").

:class:`WaitSetExecutor` waits on the same ``rcl`` wait set, so timers on the ROS clock follow ``/clock`` exactly
as with the ``SingleThreadedExecutor`` (rcl's timers carry the jump guard condition that wakes the wait; rclpy's
``EventsExecutor`` schedules them on the steady clock, which is why the simulated-clock nodes cannot use it). What
differs is the work around the wait:

* the entities are gathered, their handles entered (kept alive) and the wait set allocated only when a node's
  entities change: a node wakes its executor (triggers the executor's guard condition) whenever it creates or
  destroys one, and after such a wake-up the executor compares the entities' identities with those it waits on
  (comparing them before every wait cost 10-15 % of a simulated-clock node's CPU);
* before each wait the wait set is cleared and the same handles added again (``rcl_wait`` empties the slots of
  what was not ready);
* rclpy's QoS event handlers (every publisher's and subscription's incompatible-QoS and incompatible-type warnings,
  8-18 per node) are added to one wait in every :data:`QOS_EVENT_PERIOD_S`, not to each: a QoS event's status stays
  set in the middleware until it is taken, so none is lost; it is reported up to that period later. Other waitables
  are in every wait;
* the ready callbacks of one wait all run in that ``spin_once``, in rclpy's order (QoS events, timers,
  subscriptions, guard conditions, clients, services), called directly: no ``Task``, no coroutine, no guard trigger.
  One message is taken per ready subscription per wait, as rclpy's executor does.

What it does not cover, and says so by name: coroutine callbacks (no node of ours has one), and a ``spin_once``
inside a callback or beside another thread's (it has one wait set). Tasks given to
:meth:`create_task` (a client's future's done callbacks among them) run at the start of the next ``spin_once``.
A callback that raises ends that ``spin_once`` with its exception, as rclpy's executor does; the ready entities
after it are waited for again (their messages stay queued, timers stay ready).
"""
from __future__ import annotations

import inspect
import time
from typing import Callable

from rclpy.event_handler import EventHandler
from rclpy.exceptions import InvalidHandle
from rclpy.executors import (Executor, ExternalShutdownException, ShutdownException, TimeoutException,
                             TimeoutObject)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription
from rclpy.utilities import timeout_sec_to_nsec
from rclpy.waitable import NumberOfEntities

from hil_common.errors import ConfigError


#: A node's QoS event handlers are waited on once in this period [s] (module docstring).
QOS_EVENT_PERIOD_S = 0.2


class UnsupportedEntity(ConfigError):
    """A node handed to :class:`WaitSetExecutor` has an entity it does not run (a coroutine callback)."""


def _entity_key(nodes) -> tuple:
    """The identities of every entity the nodes have, in order: equal keys, the same wait set."""
    key = []
    for node in nodes:
        key.append(id(node))
        key.extend(map(id, node.subscriptions))
        key.append(0)
        key.extend(map(id, node.timers))
        key.append(0)
        key.extend(map(id, node.guards))
        key.append(0)
        key.extend(map(id, node.services))
        key.append(0)
        key.extend(map(id, node.waitables))
        key.append(0)
        key.extend(map(id, node.clients))
    return tuple(key)


def _plain(callback, what: str):
    if callback is not None and (inspect.iscoroutinefunction(callback)
                                 or inspect.iscoroutinefunction(getattr(callback, '__call__', None))):
        raise UnsupportedEntity(f'WaitSetExecutor runs plain callbacks only; {what} has a coroutine callback '
                                f'{callback!r} (use rclpy.executors.SingleThreadedExecutor for it)')
    return callback


class _Entities:
    """One node set's entities, their handles entered for as long as this object is the executor's current set,
    and the wait set sized for them."""

    def __init__(self, executor: 'WaitSetExecutor', nodes, key: tuple):
        self.key = key
        self._entered: list = []
        self.stale = False        # a waitable was destroyed since it was listed (wait)
        try:
            self._gather(executor, nodes)
        except BaseException:
            self.release()
            raise

    def _enter(self, handle) -> bool:
        try:
            handle.__enter__()
        except InvalidHandle:     # destroyed since it was listed: not waited on
            return False
        self._entered.append(handle)
        return True

    def _add(self, entity, table: dict, handles: list, what: str | None, extra=None) -> None:
        """``entity`` waited on (its handle entered, listed by its pointer as ``(entity, handle, extra)``); ``what``
        names it if its callback is a coroutine (None: a client, whose futures are not callbacks)."""
        handle = entity.handle
        if self._enter(handle):
            if what is not None:
                _plain(entity.callback, what)
            table[handle.pointer] = (entity, handle, extra)
            handles.append(handle)

    def _gather(self, executor, nodes) -> None:
        # pointer -> (entity, handle, extra): extra is a subscription's "with its message info"
        self.subscriptions, self.timers, self.guards, self.services, self.clients = {}, {}, {}, {}, {}
        self.waitables = []           # waited on in every wait
        self.qos_events = []          # rclpy's QoS event handlers: in one wait per QOS_EVENT_PERIOD_S
        sub_handles, timer_handles, guard_handles, service_handles, client_handles = [], [], [], [], []
        count = NumberOfEntities()
        for node in nodes:
            name = node.get_name()
            for sub in node.subscriptions:
                self._add(sub, self.subscriptions, sub_handles, f'the subscription to {sub.topic_name!r}',
                          sub._callback_type is not Subscription.CallbackType.MessageOnly)
            for tmr in node.timers:
                self._add(tmr, self.timers, timer_handles, f'a timer of node {name!r}')
            for gc in node.guards:
                self._add(gc, self.guards, guard_handles, f'a guard condition of node {name!r}')
            for srv in node.services:
                self._add(srv, self.services, service_handles, f'the service {srv.srv_name!r}')
            for cli in node.clients:
                self._add(cli, self.clients, client_handles, None)
            for waitable in node.waitables:
                if self._enter(waitable):
                    (self.qos_events if isinstance(waitable, EventHandler) else self.waitables).append(waitable)
                    count += waitable.get_num_entities()
        for gc in (executor._guard, executor._sigint_gc):
            if self._enter(gc.handle):
                guard_handles.append(gc.handle)
        self.wake_pointer = executor._guard.handle.pointer     # ready: the executor was woken (entities changed?)
        context_handle = executor.context.handle
        self._enter(context_handle)
        wait_set = self.wait_set = _rclpy.WaitSet(len(sub_handles), len(guard_handles), len(timer_handles),
                                                  len(client_handles), len(service_handles), count.num_events,
                                                  context_handle)
        # what each wait adds, in rclpy's order: (the wait set's add method, the handle)
        self.adds = [(add, handle) for add, handles in ((wait_set.add_subscription, sub_handles),
                                                        (wait_set.add_client, client_handles),
                                                        (wait_set.add_service, service_handles),
                                                        (wait_set.add_timer, timer_handles),
                                                        (wait_set.add_guard_condition, guard_handles))
                     for handle in handles]

    def wait(self, timeout_nsec: int, waitables: list):
        """One wait on the entities and ``waitables``; returns the wait set and the waitables it waited on. A
        waitable destroyed since it was listed (rclpy's QoS event handlers go with their subscription or publisher;
        the handle this holds keeps them, but they refuse to be added) is left out, and :attr:`stale` set: the
        executor gathers the entities again."""
        wait_set = self.wait_set
        wait_set.clear_entities()
        for add, handle in self.adds:
            add(handle)
        added = []
        for waitable in waitables:
            try:
                waitable.add_to_wait_set(wait_set)
            except InvalidHandle:
                self.stale = True
                continue
            added.append(waitable)
        wait_set.wait(timeout_nsec)
        return wait_set, added

    def release(self) -> None:
        entered, self._entered = self._entered, []
        for handle in reversed(entered):
            handle.__exit__(None, None, None)


class WaitSetExecutor(Executor):
    """A single-threaded rclpy executor that keeps its wait set between waits (module docstring)."""

    def __init__(self, *, context=None) -> None:
        super().__init__(context=context)
        self._entities: _Entities | None = None
        self._woken = True                 # the executor's guard fired: look whether the entities changed
        self._spinning = False             # in spin_once (its wait set is reused: no spin inside a spin)
        self._next_qos_events_s = 0.0      # when the QoS event handlers are next waited on (time.monotonic)

    def _current(self) -> _Entities:
        if not self._woken and self._entities is not None:
            return self._entities
        self._woken = False
        nodes = self.get_nodes()
        key = _entity_key(nodes)
        if self._entities is None or self._entities.key != key:
            if self._entities is not None:
                self._entities.release()
                self._entities = None
            self._entities = _Entities(self, nodes, key)
        return self._entities

    def _run_tasks(self) -> bool:
        with self._tasks_lock:
            tasks = [task for task, _, _ in self._tasks if not task.executing() and not task.done()]
        for task in tasks:
            task()
            if task.exception() is not None:
                raise task.exception()
        if tasks:
            with self._tasks_lock:
                self._tasks = [t for t in self._tasks if not t[0].done() and not t[0].cancelled()]
        return bool(tasks)

    def _wait_and_run(self, timeout_sec: float | None) -> bool:
        """One wait, then every callback it found ready; whether anything ran."""
        ran = self._run_tasks()
        entities = self._current()
        if ran:
            timeout_sec = 0.0
        waitables = entities.waitables
        if entities.qos_events:
            now = time.monotonic()
            if now >= self._next_qos_events_s:
                self._next_qos_events_s = now + QOS_EVENT_PERIOD_S
                waitables = waitables + entities.qos_events
            elif timeout_sec is None or timeout_sec < 0 or timeout_sec > self._next_qos_events_s - now:
                timeout_sec = self._next_qos_events_s - now      # a long wait still looks at them in time
        wait_set, waitables = entities.wait(timeout_sec_to_nsec(timeout_sec), waitables)
        ready_guards = wait_set.get_ready_entities('guard_condition')
        if entities.wake_pointer in ready_guards or entities.stale:     # before any callback, which could raise
            self._woken = True
        if self._is_shutdown:
            raise ShutdownException()
        if not self._context.ok():
            raise ExternalShutdownException()
        for waitable in waitables:
            if waitable.is_ready(wait_set):
                data = waitable.take_data()
                result = waitable.execute(data)
                if inspect.iscoroutine(result):     # rclpy's QoS event handlers: an async wrapper of a call
                    try:
                        result.send(None)
                    except StopIteration:
                        pass
                    else:
                        result.close()
                        raise UnsupportedEntity(f'WaitSetExecutor: the waitable {waitable!r} awaited something; '
                                                f'use rclpy.executors.SingleThreadedExecutor for it')
                ran = True
        for kind, table, run in (('timer', entities.timers, _run_timer),
                                 ('subscription', entities.subscriptions, _run_subscription),
                                 ('guard_condition', entities.guards, _run_guard_condition),
                                 ('client', entities.clients, self._run_client),
                                 ('service', entities.services, _run_service)):
            for pointer in (ready_guards if kind == 'guard_condition' else wait_set.get_ready_entities(kind)):
                entry = table.get(pointer)      # a guard condition: None for the executor's own and the SIGINT one
                if entry is not None and run(*entry):
                    ran = True
        return ran

    def _run_client(self, cli, handle, _) -> bool:
        header, response = handle.take_response(cli.srv_type.Response)
        if header is None:
            return False
        try:
            future = cli.get_pending_request(header.request_id.sequence_number)
        except KeyError:                # the request was cancelled
            return True
        future._set_executor(self)
        future.set_result(response)
        return True

    def _spin_once_impl(self, timeout_sec: float | None, condition: Callable[[], bool]) -> None:
        """Wait and run until a callback ran, ``condition()`` holds, the executor or its context is shut down, or
        ``timeout_sec`` (None or negative: no limit) has passed: rclpy's ``spin_once`` contract. A wake-up with
        nothing to run (the executor's guard condition: a node's entities changed) waits again."""
        if self._spinning:
            raise UnsupportedEntity('WaitSetExecutor: spin_once was called again while it ran (from a callback, or '
                                    'from a second thread); its wait set is one, so it spins in one thread at a time')
        self._spinning = True
        try:
            deadline = None if timeout_sec is None or timeout_sec < 0 else time.monotonic() + timeout_sec
            while not self._is_shutdown and not condition():
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if self._wait_and_run(left) or (deadline is not None and time.monotonic() >= deadline):
                    return
        finally:
            self._spinning = False

    def spin_once(self, timeout_sec: float | None = None) -> None:
        """Wait up to ``timeout_sec`` (None: no limit) for work, then run every callback that wait found ready."""
        try:
            self._spin_once_impl(timeout_sec, _never)
        except (ShutdownException, TimeoutException):
            pass

    def spin_once_until_future_complete(self, future, timeout_sec=None) -> None:
        """As :meth:`spin_once`, returning early once ``future`` is done (``timeout_sec``: seconds, None or rclpy's
        ``TimeoutObject``, which ``spin_until_future_complete`` passes)."""
        if isinstance(timeout_sec, TimeoutObject):
            timeout_sec = timeout_sec.timeout
        future.add_done_callback(lambda _future: self.wake())
        try:
            self._spin_once_impl(timeout_sec, future.done)
        except (ShutdownException, TimeoutException):
            pass

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        done = super().shutdown(timeout_sec)
        if self._entities is not None:
            self._entities.release()
            self._entities = None
        return done


def _run_timer(tmr, handle, _) -> bool:
    if not handle.is_timer_ready():      # a cancelled timer can be reported ready (rclpy's own check)
        return False
    handle.call_timer()
    tmr.callback()
    return True


def _run_subscription(sub, handle, with_info) -> bool:
    taken = handle.take_message(sub.msg_type, sub.raw)
    if taken is None:
        return False
    if with_info:
        sub.callback(*taken)
    else:
        sub.callback(taken[0])
    return True


def _run_guard_condition(gc, _handle, _) -> bool:
    if gc.callback is None:
        return False
    gc.callback()
    return True


def _run_service(srv, handle, _) -> bool:
    request, header = handle.service_take_request(srv.srv_type.Request)
    if header is None:
        return False
    srv.send_response(srv.callback(request, srv.srv_type.Response()), header)
    return True


def _never() -> bool:
    return False
