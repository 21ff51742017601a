"""The fused servicer hot path's rule in one process (``ServicerHotPath``, no DDS): CPU per wrist sample, five ways.

What ``servicer_hot_path_node`` runs per 1 kHz wrist sample, less its messages: the arm's and the table's joints
handed in, the OBSW's torques and base wrench at 250 Hz, the wrench, the side's steps and the KR 120's command. Five
rules with the Envisat graph's parameters (their node's overload guard included) take the same stream, a sample
each in turn, so that the machine's speed at any moment falls on all five alike:

* ``reference``: the separate compiled calls with the tick in Python (``fused=False``);
* ``fused``: the tick's last step and the table's command in one compiled call (the node's);
* ``quiet``: a quiet sample's tick in that call too (``quiet=True``);
* ``rows``: the node's (``fused``) with the joints handed in as a take's rows, in compiled code
  (``ServicerHotPath.arm_joint_rows``, ``table_joint_rows``; the node does so with ``compiled_io``). Here the other
  rules get their joints by a direct call each (``set_joints``, ``table_joints``), leaner than the node's Python per
  row (its rows' readings, checks and stamps), so this compares the compiled rows with the least Python they replace:
  they cost a few us more here (their arguments' unboxing), and 8 % less CPU per command in the node
  (docs/performance.md, twenty-second session);
* ``loop``: the node's, its quiet samples run on a compiled sample loop's state
  (``servicer_hot_path_loop.SampleLoopState``, entered whenever it can be; the others in Python after leaving it),
  here called from Python: each call unboxes the state's arrays, which a compiled loop does not. So the state's own
  cost per sample is measured too, after the stream: a compiled caller runs ``loop_sample`` on it for 2000 more
  samples (the same kind of stream, the table's joints sampled before each, the arm's and the OBSW's inputs held),
  as the loop will, with no Python; and so on the state of a rule whose overload guard holds (latched by its first
  late step, as ``HIL_BENCH_SERVICER_HELD`` latches the node's): its held ticks (the nominal moved on, the hold's
  torques, the table's command for the held pose).

Printed beside Pinocchio's ``aba`` measured in the same run (issue 17). The commands of the five are the same to
1e-12 (``test_servicer_hot_path_rule``); here they are checked on the stream too (the reference's to 1e-9: the table
follows its commands, so the rounding of numpy's products against the kernel's loops is fed back over thousands of
samples).
"""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aba_reference import aba_us  # noqa: E402

from hil_bringup.servicer_hot_path_kernel import ARM_ROW, QUIET_EVENT, QUIET_HELD, QUIET_NOT_DUE, QUIET_STEPPED, \
    envisat_rule, loop_sample  # noqa: E402
from hil_bringup.servicer_hot_path_loop import SampleLoopState  # noqa: E402
from hil_common.overload import OverloadGuard  # noqa: E402
from hil_common.policy_kernel import watch_sample  # noqa: E402
from hil_common.cdr import DQ_OK, POSITIONS_FULL, Q_OK  # noqa: E402

DT = 1e-3
MODES = {'quiet': {'quiet': True}, 'fused': {}, 'rows': {}, 'reference': {'fused': False}, 'loop': {}}


@njit(cache=True, nogil=True)
def _compiled_samples(wrenches, times, *args):
    """``loop_sample`` on each row of ``wrenches`` at ``times`` (both clocks) with no Python, the table's joints
    sampled just before each (their watch: ``args[0]``'s ``wf, wi``), the other inputs held: the outcomes' counts."""
    counts = np.zeros(4, dtype=np.int64)           # loop_sample's outcomes (QUIET_STEPPED ... QUIET_HELD)
    for k in range(times.shape[0]):
        watch_sample(args[0][11], args[0][12], times[k])
        counts[loop_sample(wrenches[k], times[k], times[k], *args)] += 1
    return counts


def _loop_wrench(state, wrench, t):
    """A wrist sample through the loop's state (``SampleLoopState.wrench``): its command (the loop's: its joints
    only), or None."""
    outcome, out = state.wrench(wrench, t, t)
    if outcome == QUIET_STEPPED:
        return types.SimpleNamespace(q_command=state.q_cmd.copy(), holding=False)
    return out


def _held_own(rng, n_own: int):
    """``loop_sample`` with no Python on the state of a rule whose overload guard latched at its first late step
    (any lateness holds), for ``n_own`` jittered samples: ``(CPU us per sample, the outcomes' counts)``."""
    rule, q_table_0, q_arm = envisat_rule(overload=OverloadGuard(DT, 1e-6, 1e-6, 1.0, 'latch'))
    rule.inputs_on_arrays()
    side, zeros = rule.side, np.zeros(len(q_arm))
    t = 1.0
    for _ in range(1000):                       # in Python until the guard holds (a sample a little late)
        t += DT * (1.0 + rng.uniform(-0.45, 0.45))
        side.set_joints(q_arm, zeros, t, t)
        rule.table_joints(q_table_0, None, t, t)
        rule.wrench(np.zeros(6), t, t)
        if side.overload.holding:
            break
    state = SampleLoopState(rule)
    if not side.overload.holding or not state.enter():
        raise SystemExit('bench_servicer_hot_path: the latched rule did not hold, or its loop state cannot be entered')
    times = t + DT * (np.arange(1, n_own + 1) + rng.uniform(-0.45, 0.45, n_own))
    wrenches = np.c_[rng.normal(0.0, 20.0, (n_own, 3)), rng.normal(0.0, 1.0, (n_own, 3))]
    cpu = time.process_time()
    counts = _compiled_samples(wrenches, times, *state.args())
    own_us = (time.process_time() - cpu) / n_own * 1e6
    state.leave()
    return own_us, counts


def main(samples: int = 6000) -> None:
    rules = {name: envisat_rule(**kwargs) for name, kwargs in MODES.items()}
    # (each sample: the five in turn, a different one first at each sample)
    _, q_table_0, q_arm = rules['quiet']
    n = len(q_arm)
    rng = np.random.default_rng(4)
    t = 1.0
    spent = {name: [] for name in rules}
    q_table = {name: q_table_0.copy() for name in rules}
    clock = time.perf_counter
    m = len(q_table_0)
    # the 'rows' rule's joints as a take's rows (hil_common.rcl_io.JointStateStream: one row each, every joint)
    arm_rows = np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, 2), dtype=np.int64), np.full(1, ARM_ROW, dtype=np.int64)
    table_rows = np.zeros((1, m)), np.zeros((1, m)), np.zeros((1, 2), dtype=np.int64), \
        np.full(1, Q_OK | DQ_OK | POSITIONS_FULL, dtype=np.int64)
    rules['rows'][0].inputs_on_arrays()
    rules['loop'][0].inputs_on_arrays()
    loop_state = None
    for k in range(samples + 500):
        t += DT * (1.0 + rng.uniform(-0.45, 0.45))
        sec, nanosec = int(t), int(round((t - int(t)) * 1e9))
        stamp = sec + nanosec * 1e-9             # the measurement's stamp, as a message carries it
        arm_rows[2][0] = sec, nanosec
        q_k, dq_k = q_arm + 0.02 * np.sin(0.003 * k + np.arange(n)), 0.06 * np.cos(0.003 * k + np.arange(n))
        wrench = np.r_[rng.normal(0.0, 20.0, 3), rng.normal(0.0, 1.0, 3)]
        tau, f_b = rng.normal(0.0, 1.0, n), rng.normal(0.0, 2.0, 6)
        outs = {}
        names = list(rules)
        for name in names[k % 5:] + names[:k % 5]:         # each first in turn (the caches' order)
            rule, side = rules[name][0], rules[name][0].side
            t0 = clock()
            if name == 'rows':                   # the rows' copies are the take's (its decoder writes them)
                arm_rows[0][0], arm_rows[1][0] = q_k, dq_k
                rule.arm_joint_rows(1, *arm_rows, t)
            else:
                side.set_joints(q_k, dq_k, t, stamp)
            if k % 4 == 0:
                side.set_tau(tau, t)
                side.set_wrench_base(f_b, t)
            if name == 'rows':
                table_rows[0][0], table_rows[1][0] = q_table[name], 0.0
                rule.table_joint_rows(1, *table_rows, t, t)        # (the first in Python: it starts the table)
            else:
                rule.table_joints(q_table[name], np.zeros(m), t, t)
            if name != 'loop':
                out = rule.wrench(wrench, t, t)
            else:
                if loop_state is None and side.started:
                    loop_state = SampleLoopState(rule)
                out = rule.wrench(wrench, t, t) if loop_state is None else _loop_wrench(loop_state, wrench, t)
            if k >= 500:
                spent[name].append(clock() - t0)
            if out is not None and not out.holding:
                q_table[name] = out.q_command        # the robot follows its command
            outs[name] = out
        a = outs['quiet']
        # the reference within the rounding of numpy's products, fed back through the table's joints
        for b, tol in ((outs['fused'], 1e-12), (outs['rows'], 1e-12), (outs['loop'], 1e-12), (outs['reference'], 1e-9)):
            assert (a is None) == (b is None) and (a is None or np.allclose(a.q_command, b.q_command, 0, tol)), k
    # the loop's state on its own: 2000 samples in one compiled call, after the stream (the last inputs held)
    if not loop_state.enter():
        raise SystemExit('bench_servicer_hot_path: the loop\'s state cannot be entered after the stream')
    n_own = 2000
    times = t + DT * (np.arange(1, n_own + 1) + rng.uniform(-0.45, 0.45, n_own))
    wrenches = np.c_[rng.normal(0.0, 20.0, (n_own, 3)), rng.normal(0.0, 1.0, (n_own, 3))]
    _compiled_samples(wrenches[:0], times[:0], *loop_state.args())        # loaded (compiled the first time)
    cpu = time.process_time()
    counts = _compiled_samples(wrenches, times, *loop_state.args())
    own_us = (time.process_time() - cpu) / n_own * 1e6
    loop_state.leave()
    held_us, held_counts = _held_own(rng, n_own)
    aba = aba_us()
    print(f'servicer hot path rule, one process, {samples} wrist samples at 1 kHz with jitter (the Envisat graph\'s '
          f'parameters); pin.aba: {aba:.2f} us median')
    for name, (rule, _, _) in rules.items():
        us = np.array(spent[name]) * 1e6
        print(f'  {name:9s}: median {np.median(us):6.1f} us per sample ({np.median(us) / aba:5.1f} aba), '
              f'mean {us.mean():6.1f} us; commands {rule.counters["commands"]}, held {rule.counters["held"]}, '
              f'quiet samples {rule.quiet_samples}, one-call steps {rule.fused_steps}')
    print(f'  loop state, in one compiled call (no Python): {own_us:6.1f} us CPU per sample ({own_us / aba:5.1f} aba); '
          f'stepped {counts[QUIET_STEPPED]}, not due {counts[QUIET_NOT_DUE]}, events {counts[QUIET_EVENT]} '
          f'(an event ends nothing here: the sample is counted and left as it was)')
    print(f'  the same, the overload guard holding:        {held_us:6.1f} us CPU per sample ({held_us / aba:5.1f} aba); '
          f'held {held_counts[QUIET_HELD]}, stepped {held_counts[QUIET_STEPPED]}, not due {held_counts[QUIET_NOT_DUE]}, '
          f'events {held_counts[QUIET_EVENT]}')


if __name__ == '__main__':
    main()
