"""``WaitSetExecutor`` on loopback DDS with real rclpy nodes: what rclpy's ``SingleThreadedExecutor`` does, with its
wait set kept between waits. Timers on the simulated clock against the clock they were given, messages against
what was sent, services, clients, QoS events, guard conditions, tasks, entities made and destroyed while it spins,
and the shutdown."""

import contextlib
import threading
import time

import pytest
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Int32
from std_srvs.srv import Trigger

from hil_common.ros_testing import executor_maker
from hil_common.wait_set_executor import UnsupportedEntity, WaitSetExecutor

@contextlib.contextmanager
def context_with(executor_type, *names, sim_time=False):
    """Nodes in a private context, spun by one executor of ``executor_type``."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    overrides = [Parameter('use_sim_time', value=True)] if sim_time else []
    nodes = [rclpy.create_node(name, context=ctx, parameter_overrides=overrides) for name in names]
    executor = executor_type(context=ctx)
    for node in nodes:
        executor.add_node(node)
    try:
        yield (*nodes, executor)
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        ctx.try_shutdown()


def spin_until(executor, predicate, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, 'timed out'
        executor.spin_once(timeout_sec=0.05)


@pytest.mark.parametrize('kind', ['waitset', 'single'])
def test_a_timer_on_the_simulated_clock_fires_at_each_period_of_the_clock_it_is_given(kind):
    """The rcl wait set's timers follow ``/clock``: a 10 ms timer stepped through 1 s of simulated time in 1 ms
    ticks fires 100 times, each at a multiple of its period (rclpy's ``EventsExecutor`` fired such a timer 142 times
    per simulated second, docs/performance.md). rclpy's ``SingleThreadedExecutor`` is the reference."""
    with context_with(SingleThreadedExecutor, 'clock_source') as (source, source_executor), \
            context_with(executor_maker(kind), 'timed', sim_time=True) as (timed, executor):
        clock_pub = source.create_publisher(Clock, '/clock', 10)
        fired = []
        timed.create_timer(0.010, lambda: fired.append(timed.get_clock().now().nanoseconds))
        spin_until(executor, lambda: clock_pub.get_subscription_count() > 0)
        for tick in range(1, 1001):
            now_ns = tick * 1_000_000
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(now_ns, 1_000_000_000)
            deadline = time.monotonic() + 20.0
            while timed.get_clock().now().nanoseconds != now_ns:      # /clock is best effort: sent until it lands
                assert time.monotonic() < deadline, f'the clock never reached {now_ns} ns'
                clock_pub.publish(msg)
                executor.spin_once(timeout_sec=0.05)
            executor.spin_once(timeout_sec=0.0)      # the timer made ready by that jump
        assert len(fired) == 100
        assert fired == [k * 10_000_000 for k in range(1, 101)]


def test_every_message_arrives_in_order_with_or_without_its_info():
    qos = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
    with context_with(WaitSetExecutor, 'talker', 'listener') as (talker, listener, executor):
        plain, with_info = [], []
        listener.create_subscription(Int32, 'counts', lambda m: plain.append(m.data), qos)
        listener.create_subscription(
            Int32, 'counts', lambda m, info: with_info.append((m.data, info['source_timestamp'])), qos)
        pub = talker.create_publisher(Int32, 'counts', qos)
        spin_until(executor, lambda: pub.get_subscription_count() == 2)
        for k in range(300):
            pub.publish(Int32(data=k))
        spin_until(executor, lambda: len(plain) == 300 and len(with_info) == 300)
        assert plain == list(range(300))
        assert [data for data, _ in with_info] == list(range(300))
        stamps = [stamp for _, stamp in with_info]
        assert all(stamp > 0 for stamp in stamps) and stamps == sorted(stamps)


def test_entities_made_and_destroyed_while_it_spins_are_waited_on_and_let_go():
    """A subscription made in a timer's callback receives; a destroyed subscription's handle is let go, so its
    publisher sees it leave; a cancelled timer stops."""
    with context_with(WaitSetExecutor, 'talker') as (talker, talker_executor), \
            context_with(WaitSetExecutor, 'maker') as (maker, executor):
        got = []
        made = {}
        ticks = []

        def tick():
            ticks.append(1)
            if 'sub' not in made:
                made['sub'] = maker.create_subscription(Int32, 'late', lambda m: got.append(m.data), 10)

        made['timer'] = maker.create_timer(0.01, tick)
        pub = talker.create_publisher(Int32, 'late', 10)
        spin_until(executor, lambda: 'sub' in made and pub.get_subscription_count() == 1)
        made['timer'].cancel()
        fired = len(ticks)
        pub.publish(Int32(data=7))
        spin_until(executor, lambda: got == [7])
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
        assert len(ticks) == fired, 'a cancelled timer fired'
        maker.destroy_subscription(made['sub'])
        # the executor holds the handle until its next wait; then the subscription really goes
        spin_until(executor, lambda: pub.get_subscription_count() == 0)
        pub.publish(Int32(data=8))
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
        assert got == [7]


def test_a_subscription_destroyed_between_two_spins_leaves_its_qos_events_out_of_the_next_wait(monkeypatch):
    """rclpy gives every subscription QoS event handlers (waitables). Destroyed between two spins (a recorder closed
    mid-run, as ``test_envisat_recording`` does), its handlers refuse to be added to a wait set (their destruction was
    requested): the next wait leaves them out and gathers the entities again, and the other subscriptions go on. With
    the QoS events looked at in every wait, as a wait every ``QOS_EVENT_PERIOD_S`` does (CI under a CPU quota: the
    spin raised ``InvalidHandle``)."""
    from hil_common import wait_set_executor

    monkeypatch.setattr(wait_set_executor, 'QOS_EVENT_PERIOD_S', 0.0)
    with context_with(WaitSetExecutor, 'talker', 'listener') as (talker, listener, executor):
        kept, gone = [], []
        listener.create_subscription(Int32, 'kept', lambda m: kept.append(m.data), 10)
        sub = listener.create_subscription(Int32, 'gone', lambda m: gone.append(m.data), 10)
        pub_kept = talker.create_publisher(Int32, 'kept', 10)
        pub_gone = talker.create_publisher(Int32, 'gone', 10)
        spin_until(executor, lambda: pub_kept.get_subscription_count() == 1 and pub_gone.get_subscription_count() == 1)
        pub_gone.publish(Int32(data=1))
        spin_until(executor, lambda: gone == [1])
        assert sub.event_handlers                          # rclpy's QoS event handlers of the subscription
        deadline = time.monotonic() + 0.3              # the wake-ups of the entities made are taken
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
        # else the next wait gathers the entities anew, or leaves the handlers out, and this tests nothing
        assert not executor._woken and all(h in executor._entities.qos_events for h in sub.event_handlers)
        listener.destroy_subscription(sub)
        pub_kept.publish(Int32(data=2))
        spin_until(executor, lambda: kept == [2])          # raised InvalidHandle before
        spin_until(executor, lambda: pub_gone.get_subscription_count() == 0)
        pub_gone.publish(Int32(data=3))
        pub_kept.publish(Int32(data=4))
        spin_until(executor, lambda: kept == [2, 4])
        assert gone == [1]


def test_a_subscription_made_by_another_thread_during_a_wait_is_waited_on_at_once():
    """Making an entity wakes the executor, which then waits on it: a wait of 10 s ends with the new subscription's
    first message, not with its timeout."""
    with context_with(WaitSetExecutor, 'talker') as (talker, talker_executor), \
            context_with(WaitSetExecutor, 'listener') as (listener, executor):
        pub = talker.create_publisher(Int32, 'from_thread', 10)
        executor.spin_once(timeout_sec=0.0)            # its entities as they are before the thread makes one
        got, done = [], threading.Event()

        def make_and_talk():
            time.sleep(0.2)
            listener.create_subscription(Int32, 'from_thread', lambda m: got.append(m.data), 10)
            while not done.is_set():
                pub.publish(Int32(data=5))
                time.sleep(0.05)

        thread = threading.Thread(target=make_and_talk)
        thread.start()
        try:
            started = time.monotonic()
            while not got and time.monotonic() - started < 10.0:
                executor.spin_once(timeout_sec=10.0)
            assert got and got[0] == 5
            assert time.monotonic() - started < 9.0, 'the new subscription was waited on only after a timeout'
        finally:
            done.set()
            thread.join()


def test_services_clients_parameters_guard_conditions_and_tasks_run():
    with context_with(WaitSetExecutor, 'server', 'caller') as (server, caller, executor):
        calls = []

        def answer(request, response):
            calls.append(1)
            response.success, response.message = True, f'call {len(calls)}'
            return response

        server.create_service(Trigger, 'poke', answer)
        client = caller.create_client(Trigger, 'poke')
        spin_until(executor, client.service_is_ready)
        for k in (1, 2):
            future = client.call_async(Trigger.Request())
            executor.spin_until_future_complete(future, timeout_sec=20.0)
            assert future.done() and future.result().message == f'call {k}'
        # the node's own parameter services, answered by the same executor
        from rcl_interfaces.srv import GetParameters
        server.declare_parameter('gain', 2.5)
        params = caller.create_client(GetParameters, '/server/get_parameters')
        spin_until(executor, params.service_is_ready)
        future = params.call_async(GetParameters.Request(names=['gain']))
        executor.spin_until_future_complete(future, timeout_sec=20.0)
        assert future.result().values[0].double_value == 2.5
        # a guard condition triggered from another thread, and a task
        woken = []
        guard = server.create_guard_condition(lambda: woken.append(threading.get_ident()))
        threading.Thread(target=guard.trigger).start()
        spin_until(executor, lambda: woken)
        assert woken == [threading.get_ident()]          # its callback ran in the spinning thread
        task = executor.create_task(lambda: 41 + 1)
        spin_until(executor, task.done)
        assert task.result() == 42


def test_a_qos_event_raised_between_the_waits_that_look_at_it_reaches_its_callback(monkeypatch):
    """The QoS event handlers (waitables) are waited on once per ``QOS_EVENT_PERIOD_S`` (here 1.5 s): a reliable
    subscription to a best-effort publisher made just after such a wait is told that the QoS is incompatible at the
    next one. The event's status stayed set meanwhile (discovery on loopback takes well under 1.5 s)."""
    from rclpy.event_handler import SubscriptionEventCallbacks

    from hil_common import wait_set_executor

    monkeypatch.setattr(wait_set_executor, 'QOS_EVENT_PERIOD_S', 1.5)
    incompatible = []
    callbacks = SubscriptionEventCallbacks(incompatible_qos=lambda info: incompatible.append(time.monotonic()))
    with context_with(WaitSetExecutor, 'talker', 'listener') as (talker, listener, executor):
        listener.create_subscription(Int32, 'mismatch', lambda m: None,
                                     QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
                                     event_callbacks=callbacks)
        executor.spin_once(timeout_sec=0.0)          # its entities gathered, its QoS events looked at
        looked_at = time.monotonic()
        talker.create_publisher(Int32, 'mismatch', QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        spin_until(executor, lambda: incompatible)
        assert incompatible[0] - looked_at >= 1.4       # seen at the next look, not when it was raised


def test_a_callback_that_raises_ends_that_spin_and_the_next_messages_still_arrive():
    qos = QoSProfile(depth=10)
    with context_with(WaitSetExecutor, 'talker', 'listener') as (talker, listener, executor):
        got = []

        def take(msg):
            got.append(msg.data)
            if msg.data == 1:
                raise ArithmeticError('the callback failed')

        listener.create_subscription(Int32, 'faulty', take, qos)
        pub = talker.create_publisher(Int32, 'faulty', qos)
        spin_until(executor, lambda: pub.get_subscription_count() == 1)
        pub.publish(Int32(data=1))
        with pytest.raises(ArithmeticError, match='the callback failed'):
            spin_until(executor, lambda: False, timeout_s=20.0)
        pub.publish(Int32(data=2))
        spin_until(executor, lambda: got == [1, 2])


def test_a_coroutine_callback_is_refused_by_name():
    async def cb(msg):
        return msg

    with context_with(WaitSetExecutor, 'asyncish') as (node, executor):
        node.create_subscription(Int32, 'coroutine_topic', cb, 10)
        with pytest.raises(UnsupportedEntity, match='coroutine_topic'):
            executor.spin_once(timeout_sec=0.0)


def test_a_spin_inside_a_callback_is_refused_by_name():
    with context_with(WaitSetExecutor, 'nested') as (node, executor):
        refused = []

        def tick():
            try:
                executor.spin_once(timeout_sec=0.0)
            except UnsupportedEntity as exc:
                refused.append(str(exc))

        node.create_timer(0.01, tick)
        spin_until(executor, lambda: refused)
        assert 'called again while it ran' in refused[0]
        executor.spin_once(timeout_sec=0.0)          # after it: spins as before


def test_a_shutdown_of_its_context_ends_a_wait_with_no_timeout():
    with context_with(WaitSetExecutor, 'idle') as (node, executor):
        ctx = executor.context
        timer = threading.Timer(0.3, ctx.shutdown)
        timer.start()
        started = time.monotonic()
        with pytest.raises(ExternalShutdownException):
            executor.spin_once(timeout_sec=None)
        timer.join()
        assert time.monotonic() - started < 20.0


def test_node_executor_gives_the_simulated_clock_nodes_and_the_clocks_publisher_a_wait_set(monkeypatch):
    """``run_node``'s choice: rclpy's events executor on the wall clock (its timers do not follow ``/clock``),
    ``WaitSetExecutor`` on the simulated clock and for the node that publishes it, rclpy's single-threaded executor for
    every node with ``HIL_EXECUTOR=single``; another value stops the start by name."""
    from hil_common.errors import ConfigError
    from hil_common.ros_main import EXECUTOR_ENV, node_executor

    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    with context_with(SingleThreadedExecutor, 'on_wall') as (wall, _), \
            context_with(SingleThreadedExecutor, 'on_sim', sim_time=True) as (sim, _):
        made = []

        def kind(node):
            made.append(node_executor(node))
            return type(made[-1]).__name__

        wall.publishes_clock = False
        chosen = [kind(wall), kind(sim)]
        wall.publishes_clock = True
        chosen.append(kind(wall))
        assert chosen == ['EventsExecutor', 'WaitSetExecutor', 'WaitSetExecutor']
        monkeypatch.setenv(EXECUTOR_ENV, 'single')
        assert {kind(wall), kind(sim)} == {'SingleThreadedExecutor'}
        for executor in made:
            executor.shutdown()
        monkeypatch.setenv(EXECUTOR_ENV, 'lean')
        with pytest.raises(ConfigError, match=EXECUTOR_ENV):
            node_executor(sim)
