"""The CPU a node's executor costs per message: rclpy's ``SingleThreadedExecutor``, our ``WaitSetExecutor`` (the
simulated-clock nodes' since the twenty-eighth session) and rclpy's ``EventsExecutor`` (the wall-clock nodes').

For each executor, a listener process shaped like one of our nodes (4 ``WrenchStamped`` subscriptions, 4 publishers,
so 8 QoS event handlers, a 100 Hz timer, the parameter services) is fed by a talker process at 500 Hz on each
subscription (2000 messages/s) over loopback DDS; the listener's process CPU time over 8 s, from ``getrusage``,
divided by the messages it took. The executors run one after the other in the same run, beside Pinocchio's ``aba``
measured in it (the ratio cancels the machine's load). Printed, never asserted. ``./dev bench executors``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from hil_common.errors import StartError

LISTEN_S = 8.0
SUBSCRIPTIONS = 4

LISTENER = textwrap.dedent('''
    import resource, sys, time
    from hil_common.network import apply_network_profile
    apply_network_profile()
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    kind, listen_s, n_subs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rclpy.init()
    node = rclpy.create_node('bench_executors_listener')
    count = [0]
    def taken(msg):
        count[0] += 1
    for i in range(n_subs):
        node.create_subscription(WrenchStamped, f'bench_executors/in{i}', taken, 10)
        node.create_publisher(WrenchStamped, f'bench_executors/out{i}', 10)
    node.create_timer(0.01, lambda: None)
    from hil_common.ros_testing import executor_maker
    executor = executor_maker(kind)()
    executor.add_node(node)
    print('ready', flush=True)
    start = time.monotonic()
    while count[0] == 0 and time.monotonic() - start < 30.0:
        executor.spin_once(timeout_sec=0.1)
    warm = time.monotonic()
    while time.monotonic() - warm < 1.0:
        executor.spin_once(timeout_sec=0.1)
    before, r0, t0 = count[0], resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    while time.monotonic() - t0 < listen_s:
        executor.spin_once(timeout_sec=0.1)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    print(f'result {count[0] - before} {cpu}', flush=True)
''')

TALKER = textwrap.dedent('''
    import sys, time
    from hil_common.network import apply_network_profile
    apply_network_profile()
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    run_s, n_subs = float(sys.argv[1]), int(sys.argv[2])
    rclpy.init()
    node = rclpy.create_node('bench_executors_talker')
    pubs = [node.create_publisher(WrenchStamped, f'bench_executors/in{i}', 10) for i in range(n_subs)]
    msg = WrenchStamped()
    start = next_t = time.monotonic()
    try:
        while time.monotonic() - start < run_s:
            for pub in pubs:
                pub.publish(msg)
            next_t += 0.002
            time.sleep(max(0.0, next_t - time.monotonic()))
    except Exception:
        if rclpy.ok():        # not the SIGTERM that ends it
            raise
''')


def measure(kind: str) -> tuple[int, float]:
    """(messages taken, listener CPU seconds) for one executor kind."""
    listener = subprocess.Popen([sys.executable, '-c', LISTENER, kind, str(LISTEN_S), str(SUBSCRIPTIONS)],
                                stdout=subprocess.PIPE, text=True)
    try:
        if listener.stdout.readline().strip() != 'ready':
            raise StartError(f'the {kind} listener did not start')
        talker = subprocess.Popen([sys.executable, '-c', TALKER, str(LISTEN_S + 6.0), str(SUBSCRIPTIONS)])
        try:
            line = listener.stdout.readline().split()
        finally:
            talker.terminate()
            talker.wait(timeout=30)
        if not line or line[0] != 'result':
            raise StartError(f'the {kind} listener gave no result')
        taken = int(line[1])
        if taken == 0:
            raise StartError(f'the {kind} listener took no message in {LISTEN_S:.0f} s (the talker never matched)')
        return taken, float(line[2])
    finally:
        listener.wait(timeout=30)


def main(argv=None) -> None:
    sys.path.insert(0, __file__.rsplit('/', 1)[0])
    from aba_reference import aba_us

    aba = aba_us()
    print(f'a node-like listener ({SUBSCRIPTIONS} subscriptions at 500 Hz each, {SUBSCRIPTIONS} publishers, a 100 Hz '
          f'timer), {LISTEN_S:.0f} s each; Pinocchio aba {aba:.2f} us in this run', flush=True)
    for kind, what in (('single', "rclpy's SingleThreadedExecutor"), ('waitset', 'WaitSetExecutor (ours)'),
                       ('events', "rclpy's EventsExecutor")):
        taken, cpu = measure(kind)
        per = cpu / taken * 1e6
        print(f'  {what:34s} {taken:6d} messages, {cpu:5.2f} s CPU ({cpu / LISTEN_S * 100:3.0f} % of a core): '
              f'{per:6.1f} us per message ({per / aba:5.1f} aba)', flush=True)
