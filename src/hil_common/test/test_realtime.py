"""hil_common.realtime: SCHED_FIFO on every thread of a process, CPU pinning, clear refusals.

Runs in child processes, so the test runner's own scheduling is never changed.
"""

import os
import subprocess
import sys

import pytest

CHILD = r'''
import os, sys, threading, time
from hil_common.realtime import make_realtime
stop = threading.Event()
threads = [threading.Thread(target=stop.wait) for _ in range(3)]
for t in threads:
    t.start()
ok, message = make_realtime(int(sys.argv[1]), [int(c) for c in sys.argv[2].split(',') if c])
late = threading.Thread(target=stop.wait); late.start()       # created afterwards: inherits
tids = [int(t) for t in os.listdir('/proc/self/task')]
policies = sorted({os.sched_getscheduler(t) for t in tids})
cpus = sorted(os.sched_getaffinity(0) | os.sched_getaffinity(late.native_id))   # calling thread, and one started later
print(ok, policies, cpus, len(tids), message, sep='|')
stop.set()
'''


def run_child(priority, cpus=''):
    out = subprocess.run([sys.executable, '-c', CHILD, str(priority), cpus], capture_output=True, text=True, check=True)
    ok, policies, cpus_seen, n, message = out.stdout.strip().split('|')
    return ok == 'True', eval(policies), eval(cpus_seen), int(n), message


def can_use_fifo() -> bool:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


def test_every_thread_gets_fifo_or_a_clear_refusal():
    ok, policies, _, n, message = run_child(50)
    assert n >= 5                                   # main + 3 before + 1 after
    if can_use_fifo():
        assert ok and policies == [os.SCHED_FIFO] and 'SCHED_FIFO priority 50' in message
    else:
        assert not ok and policies == [os.SCHED_OTHER] and 'refused' in message


def test_pinning_applies_to_the_calling_thread_and_its_later_threads_and_unknown_cpus_are_refused():
    cpu = min(os.sched_getaffinity(0))
    ok, policies, cpus, _, message = run_child(0, str(cpu))
    assert ok and cpus == [cpu] and policies == [os.SCHED_OTHER] and f'pinned to CPUs [{cpu}]' in message
    ok, policies, _, _, message = run_child(50, '1023')
    assert not ok and 'not available' in message and 'not pinned' in message
    if can_use_fifo():                              # the priority still applies
        assert policies == [os.SCHED_FIFO]


def test_priority_out_of_range_is_an_error():
    from hil_common.realtime import make_realtime

    with pytest.raises(ValueError, match='priority'):
        make_realtime(100)


def test_make_normal_returns_every_thread_to_normal_scheduling():
    child = CHILD.replace("print(ok", "from hil_common.realtime import make_normal\nmake_normal()\n"
                          "policies = sorted({os.sched_getscheduler(t) for t in tids})\nprint(ok")
    out = subprocess.run([sys.executable, '-c', child, '50', ''], capture_output=True, text=True, check=True)
    assert eval(out.stdout.split('|')[1]) == [os.SCHED_OTHER]
