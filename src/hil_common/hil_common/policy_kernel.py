"""A fixed-step node's policies as compiled state machines on arrays (Numba; no rclpy): for a sample run in compiled code.

The servicer hot path's 30 % of a core needs a sample with no Python in it (docs/performance.md, "The servicer's
sample with no Python: the plan"). Its rule decides with four small policies, each a Python class that other nodes
use as they are:

* :class:`hil_common.pacing.StepPacer` -- which steps of the fixed grid are due (:func:`pacer_due`,
  :func:`pacer_skip_to`, :func:`pacer_step_time`);
* :class:`hil_common.freshness.InputWatch` -- an input's freshness and its recovery (:func:`watch_sample`,
  :func:`watch_update`);
* :class:`hil_common.freshness.HeldInput` -- a held value while fresh (:func:`held_fresh`);
* :class:`hil_common.overload.OverloadGuard` -- late ticks and dropped steps, its window's mean lateness, the hold
  and its recovery (:func:`guard_update`).

Here each is a function of its state in arrays (the layouts below; ``nan`` where the class has None), with the
class's own steps in the same order, so the results are the same to the bit. The classes stay the definition a
reader reads and what the Python nodes run; :class:`PacerState`, :class:`WatchState` and :class:`GuardState`
copy a class's state into arrays and back (a compiled loop starts from the Python objects and hands its state back
for a rare event), and ``test_policy_kernel`` drives both with random call sequences and requires the same state
after every call. The guard's texts are made in Python from the numbers kept (:meth:`GuardState.reason`).
"""

from __future__ import annotations

import collections
import math

import numpy as np
from numba import njit

from hil_common.errors import ConfigError
from hil_common.freshness import NO_DATA, OK, RECOVERING, STALE, WAITING, HeldInput, InputWatch
from hil_common.overload import ERROR, POLICIES, OverloadGuard
from hil_common.overload import OK as LEVEL_OK
from hil_common.overload import WARN as LEVEL_WARN
from hil_common.pacing import StepPacer

_OPTS = dict(cache=True, nogil=True, fastmath=False, error_model='numpy')

# -- StepPacer: pf = [t0_s, dt_s, last_late_s], pi = [steps_done, overruns, last_dropped, max_catch_up] ----------
P_T0, P_DT, P_LAST_LATE = range(3)
P_STEPS, P_OVERRUNS, P_DROPPED, P_MAX_CATCH_UP = range(4)


@njit(**_OPTS)
def steps_since(t0_s, now_s, dt_s):
    """:func:`hil_common.pacing.steps_since`."""
    return max(0, int((now_s - t0_s) / dt_s + 1e-9))


@njit(**_OPTS)
def pacer_step_time(pf, k):
    """:meth:`StepPacer.step_time`."""
    return pf[P_T0] + k * pf[P_DT]


@njit(**_OPTS)
def pacer_due(pf, pi, now_s):
    """:meth:`StepPacer.due`: the steps to run now, marked done."""
    n = steps_since(pf[P_T0], now_s, pf[P_DT]) - pi[P_STEPS]
    pi[P_DROPPED] = 0
    if n <= 0:
        pf[P_LAST_LATE] = 0.0
        return 0
    pf[P_LAST_LATE] = now_s - pacer_step_time(pf, pi[P_STEPS] + 1)
    if n > pi[P_MAX_CATCH_UP]:
        dropped = n - pi[P_MAX_CATCH_UP]
        pi[P_DROPPED] = dropped
        pi[P_OVERRUNS] += dropped
        pi[P_STEPS] += dropped
        n = pi[P_MAX_CATCH_UP]
    pi[P_STEPS] += n
    return n


@njit(**_OPTS)
def pacer_skip_to(pf, pi, now_s):
    """:meth:`StepPacer.skip_to`."""
    n = max(0, steps_since(pf[P_T0], now_s, pf[P_DT]) - pi[P_STEPS])
    pi[P_STEPS] += n
    return n


class PacerState:
    """A :class:`StepPacer`'s state as ``(pf, pi)`` (:func:`pacer_due`'s layout)."""

    def __init__(self, pacer: StepPacer):
        self.pf = np.array([pacer.t0_s, pacer.dt_s, pacer.last_late_s])
        self.pi = np.array([pacer.steps_done, pacer.overruns, pacer.last_dropped, pacer.max_catch_up], dtype=np.int64)

    def store(self, pacer: StepPacer) -> None:
        """Write the state back into ``pacer``."""
        pacer.t0_s, pacer.dt_s, pacer.last_late_s = (float(v) for v in self.pf)
        pacer.steps_done, pacer.overruns, pacer.last_dropped, pacer.max_catch_up = (int(v) for v in self.pi)


# -- InputWatch: wf = [timeout_s, start_timeout_s, recover_after_s, started_s, last_s, healthy_since],
#    wi = [state, auto_recover, stale_events, recoveries, start_timeouts, samples]; nan for None ------------------
W_TIMEOUT, W_START_TIMEOUT, W_RECOVER_AFTER, W_STARTED, W_LAST, W_HEALTHY = range(6)
W_STATE, W_AUTO, W_STALE_EVENTS, W_RECOVERIES, W_START_TIMEOUTS, W_SAMPLES = range(6)
#: InputWatch's states by their codes in ``wi[W_STATE]``
WATCH_STATES = (WAITING, NO_DATA, OK, STALE, RECOVERING)
S_WAITING, S_NO_DATA, S_OK, S_STALE, S_RECOVERING = range(5)


@njit(**_OPTS)
def watch_update(wf, wi, now_s):
    """:meth:`InputWatch.update`: the state's code at ``now_s``."""
    if np.isnan(wf[W_STARTED]):
        wf[W_STARTED] = now_s
    if np.isnan(wf[W_LAST]):
        if wi[W_STATE] != S_NO_DATA and now_s - wf[W_STARTED] > wf[W_START_TIMEOUT]:
            wi[W_START_TIMEOUTS] += 1
            wi[W_STATE] = S_NO_DATA
        return wi[W_STATE]
    if not now_s - wf[W_LAST] <= wf[W_TIMEOUT]:
        if wi[W_STATE] == S_OK or wi[W_STATE] == S_RECOVERING:
            wi[W_STALE_EVENTS] += 1
        wi[W_STATE] = S_STALE
        wf[W_HEALTHY] = np.nan
    elif wi[W_STATE] == S_RECOVERING and wi[W_AUTO] != 0 and now_s - wf[W_HEALTHY] >= wf[W_RECOVER_AFTER]:
        wi[W_STATE] = S_OK
        wi[W_RECOVERIES] += 1
    return wi[W_STATE]


@njit(**_OPTS)
def measurement_time(sec, nanosec, by_stamp, now_s):
    """When a message stamped ``(sec, nanosec)`` was taken: with ``by_stamp`` (``use_sim_time``: the twin's stamps)
    its stamp, else (or for a stamp that is not a positive finite time) ``now_s``, the arrival.
    :func:`hil_common.lab_clock.measurement_seconds` in compiled code (the fused servicer hot path's table joints)."""
    if by_stamp:
        t = sec + 1e-9 * nanosec
        if 0.0 < t < np.inf:
            return t
    return now_s


@njit(**_OPTS)
def watch_sample(wf, wi, now_s):
    """:meth:`InputWatch.sample`: a valid sample arrived at ``now_s``."""
    last = wf[W_LAST]
    if wi[W_STATE] == S_OK and not np.isnan(last) and now_s - last <= wf[W_TIMEOUT]:
        wf[W_LAST] = now_s
        wi[W_SAMPLES] += 1
        return
    if np.isnan(wf[W_STARTED]):
        wf[W_STARTED] = now_s
    wi[W_SAMPLES] += 1
    if wi[W_STATE] == S_WAITING or wi[W_STATE] == S_NO_DATA:
        wi[W_STATE] = S_OK
    elif not np.isnan(last) and now_s - last > wf[W_TIMEOUT]:
        if wi[W_STATE] == S_OK or wi[W_STATE] == S_RECOVERING:
            wi[W_STALE_EVENTS] += 1
        wi[W_STATE] = S_STALE
        wf[W_HEALTHY] = np.nan
    if wi[W_STATE] == S_STALE:
        wi[W_STATE] = S_RECOVERING
    if wi[W_STATE] == S_RECOVERING and np.isnan(wf[W_HEALTHY]):
        wf[W_HEALTHY] = now_s
    wf[W_LAST] = now_s
    watch_update(wf, wi, now_s)


def _nan(value) -> float:
    return math.nan if value is None else float(value)


def _none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


class WatchState:
    """An :class:`InputWatch`'s state as ``(wf, wi)`` (:func:`watch_sample`'s layout)."""

    def __init__(self, watch: InputWatch):
        self.wf = np.array([watch.timeout_s, watch.start_timeout_s, watch.recover_after_s, _nan(watch.started_s),
                            _nan(watch.last_s), _nan(watch._healthy_since)])
        self.wi = np.array([WATCH_STATES.index(watch.state), watch.auto_recover, watch.stale_events, watch.recoveries,
                            watch.start_timeouts, watch.samples], dtype=np.int64)

    def store(self, watch: InputWatch) -> None:
        """Write the state back into ``watch``."""
        wf, wi = self.wf, self.wi
        watch.timeout_s, watch.start_timeout_s, watch.recover_after_s = (float(v) for v in wf[:3])
        watch.started_s, watch.last_s, watch._healthy_since = (_none(v) for v in wf[3:])
        watch.state = WATCH_STATES[int(wi[W_STATE])]
        watch.auto_recover = bool(wi[W_AUTO])
        watch.stale_events, watch.recoveries, watch.start_timeouts, watch.samples = (int(v) for v in wi[2:])


# -- HeldInput ----------------------------------------------------------------------------------------------------
@njit(**_OPTS)
def held_fresh(stamp_s, now_s, timeout_s):
    """:meth:`HeldInput.fresh` (``stamp_s`` nan: nothing held yet)."""
    return not np.isnan(stamp_s) and now_s - stamp_s <= timeout_s


# -- OverloadGuard: gf = parameters and state (G_* below), gi = counters and flags, and its window as a ring ---------
G_DT, G_WARN, G_HOLD, G_RECOVER, G_MEAN_LATE, G_WINDOW, G_WINDOW_LATE, G_FIRST_TICK, G_MEAN_WINDOW, G_MAX_LATE, \
    G_ON_TIME_SINCE, G_CALM_SINCE, G_REASON_LATE, G_REASON_MEAN = range(14)
GI_WINDOW_STEPS, GI_HOLDING, GI_LEVEL, GI_TICKS, GI_LATE_TICKS, GI_DROPPED, GI_HOLDS, GI_POLICY, GI_REASON, \
    GI_REASON_DROPPED, GI_HEAD, GI_COUNT = range(12)
#: OverloadGuard's levels and policies by their codes
LEVELS, POLICY_CODES = (LEVEL_OK, LEVEL_WARN, ERROR), tuple(POLICIES)
L_OK, L_WARN, L_ERROR = range(3)
#: ``gi[GI_REASON]``: which of the guard's texts its reason is (0: the one it was given, kept in Python)
R_KEPT, R_DROPPED, R_HOLD_LATE, R_STEADY, R_RUNNING_LATE, R_RECOVERING = range(6)
#: ticks the window's ring holds (1 s at 1 kHz needs 1000); more in one window is refused (:func:`guard_update`)
RING = 8192


@njit(**_OPTS)
def burst_lateness_s(late_s, steps, dt_s):
    """:func:`hil_common.overload.burst_lateness_s`."""
    if late_s <= 0.0 or steps <= 0:
        return 0.0
    m = min(steps, int(late_s / dt_s) + 1)
    return m * late_s - dt_s * m * (m - 1) / 2.0


@njit(**_OPTS)
def guard_update(gf, gi, ring_t, ring_steps, ring_late, now_s, late_s, dropped, steps):
    """:meth:`OverloadGuard.update`: one tick. Returns 1 when the level or the hold changed, else 0; -1 (nothing
    changed) when the ring is full (the window holds as many ticks as the ring)."""
    if gi[GI_COUNT] >= ring_t.shape[0]:
        return -1
    before_level, before_holding = gi[GI_LEVEL], gi[GI_HOLDING]
    gi[GI_TICKS] += 1
    late_s = max(0.0, late_s)
    steps = max(1, steps)
    # the window (OverloadGuard._mean_late)
    if np.isnan(gf[G_FIRST_TICK]):
        gf[G_FIRST_TICK] = now_s
    late_sum = burst_lateness_s(late_s, steps, gf[G_DT])
    n = ring_t.shape[0]
    head = gi[GI_HEAD]
    ring_t[head], ring_steps[head], ring_late[head] = now_s, steps, late_sum
    gi[GI_HEAD] = (head + 1) % n
    gi[GI_COUNT] += 1
    gi[GI_WINDOW_STEPS] += steps
    gf[G_WINDOW_LATE] += late_sum
    while gi[GI_COUNT] > 0:
        first = (gi[GI_HEAD] - gi[GI_COUNT]) % n
        if not ring_t[first] <= now_s - gf[G_WINDOW] + 1e-9:
            break
        gi[GI_WINDOW_STEPS] -= ring_steps[first]
        gf[G_WINDOW_LATE] -= ring_late[first]
        gi[GI_COUNT] -= 1
    if gi[GI_COUNT] == 0:
        gi[GI_WINDOW_STEPS] = 0
        gf[G_WINDOW_LATE] = 0.0
    gf[G_MEAN_WINDOW] = gf[G_WINDOW_LATE] / gi[GI_WINDOW_STEPS] if gi[GI_WINDOW_STEPS] else 0.0
    whole = now_s - gf[G_FIRST_TICK] >= gf[G_WINDOW] - 1e-9
    # the tick (OverloadGuard.update)
    steadily_late = whole and gf[G_MEAN_WINDOW] > gf[G_MEAN_LATE]
    gf[G_MAX_LATE] = max(gf[G_MAX_LATE], late_s)
    gi[GI_DROPPED] += dropped
    on_time = late_s <= gf[G_WARN] and dropped == 0
    if not on_time:
        gi[GI_LATE_TICKS] += 1
        gf[G_ON_TIME_SINCE] = np.nan
    elif np.isnan(gf[G_ON_TIME_SINCE]):
        gf[G_ON_TIME_SINCE] = now_s
    must_hold = dropped > 0 or late_s > gf[G_HOLD] or steadily_late
    calm = not must_hold and gf[G_MEAN_WINDOW] <= 0.5 * gf[G_MEAN_LATE]
    if not calm:
        gf[G_CALM_SINCE] = np.nan
    elif np.isnan(gf[G_CALM_SINCE]):
        gf[G_CALM_SINCE] = now_s
    policy_off = gi[GI_POLICY] == 2
    if must_hold and not policy_off:
        if gi[GI_HOLDING] == 0:
            gi[GI_HOLDS] += 1
        gi[GI_HOLDING] = 1
        if dropped:
            gi[GI_REASON], gi[GI_REASON_DROPPED] = R_DROPPED, dropped
        elif late_s > gf[G_HOLD]:
            gi[GI_REASON], gf[G_REASON_LATE] = R_HOLD_LATE, late_s
        else:
            gi[GI_REASON], gf[G_REASON_MEAN] = R_STEADY, gf[G_MEAN_WINDOW]
    elif gi[GI_HOLDING] != 0 and gi[GI_POLICY] == 0 and calm and now_s - gf[G_CALM_SINCE] >= gf[G_RECOVER]:
        gi[GI_HOLDING] = 0
    if gi[GI_HOLDING] != 0:
        gi[GI_LEVEL] = L_ERROR
    elif must_hold or not on_time:
        gi[GI_LEVEL] = L_WARN
        if dropped:
            gi[GI_REASON], gi[GI_REASON_DROPPED] = R_DROPPED, dropped
        elif steadily_late:
            gi[GI_REASON], gf[G_REASON_MEAN] = R_STEADY, gf[G_MEAN_WINDOW]
        else:
            gi[GI_REASON], gf[G_REASON_LATE] = R_RUNNING_LATE, late_s
    elif not np.isnan(gf[G_ON_TIME_SINCE]) and now_s - gf[G_ON_TIME_SINCE] >= gf[G_RECOVER]:
        gi[GI_LEVEL] = L_OK
    elif gi[GI_LEVEL] == L_ERROR:
        gi[GI_LEVEL] = L_WARN
        gi[GI_REASON] = R_RECOVERING
    return 1 if (gi[GI_LEVEL] != before_level or gi[GI_HOLDING] != before_holding) else 0


class GuardState:
    """An :class:`OverloadGuard`'s state as ``(gf, gi)`` and its window as a ring of :data:`RING` ticks
    (:func:`guard_update`'s layout). The guard's reason text is kept as it was given (code :data:`R_KEPT`)
    until an update sets another."""

    def __init__(self, guard: OverloadGuard, ring: int = RING):
        if len(guard._window) > ring:
            raise ConfigError(f'overload guard: {len(guard._window)} ticks in its window, the ring holds {ring}')
        self.gf = np.array([guard.dt_s, guard.warn_late_s, guard.hold_late_s, guard.recover_after_s, guard.mean_late_s,
                            guard.window_s, guard._window_late, _nan(guard._first_tick_s), guard.mean_late_window_s,
                            guard.max_late_s, _nan(guard._on_time_since), _nan(guard._calm_since), 0.0, 0.0])
        self.gi = np.array([guard._window_steps, guard.holding, LEVELS.index(guard.level), guard.ticks,
                            guard.late_ticks, guard.dropped_steps, guard.holds, POLICY_CODES.index(guard.policy),
                            R_KEPT, 0, len(guard._window) % ring, len(guard._window)], dtype=np.int64)
        self.ring_t, self.ring_steps, self.ring_late = np.zeros(ring), np.zeros(ring, dtype=np.int64), np.zeros(ring)
        for k, (t, steps, late) in enumerate(guard._window):
            self.ring_t[k], self.ring_steps[k], self.ring_late[k] = t, steps, late
        self.kept_reason = guard.reason

    def update(self, now_s: float, late_s: float, dropped: int, steps: int = 1) -> int:
        """:func:`guard_update` on this state."""
        return guard_update(self.gf, self.gi, self.ring_t, self.ring_steps, self.ring_late, float(now_s),
                            float(late_s), int(dropped), int(steps))

    def reason(self) -> str:
        """The guard's reason text, as :class:`OverloadGuard` words it."""
        gf, gi = self.gf, self.gi
        code = int(gi[GI_REASON])
        if code == R_DROPPED:
            return f'{int(gi[GI_REASON_DROPPED])} steps dropped'
        if code == R_HOLD_LATE:
            return f'a step ran {gf[G_REASON_LATE] * 1e3:.0f} ms late (hold beyond {gf[G_HOLD] * 1e3:.0f} ms)'
        if code == R_STEADY:
            return (f'steadily late: the steps of the last {gf[G_WINDOW]:g} s ran {gf[G_REASON_MEAN] * 1e3:.0f} ms '
                    f'late on average (hold beyond {gf[G_MEAN_LATE] * 1e3:.0f} ms)')
        if code == R_RUNNING_LATE:
            return f'running late: a step ran {gf[G_REASON_LATE] * 1e3:.0f} ms after its time'
        if code == R_RECOVERING:
            return 'recovering from a hold: on time again'
        return self.kept_reason

    def store(self, guard: OverloadGuard) -> None:
        """Write the state back into ``guard``."""
        gf, gi = self.gf, self.gi
        guard._window_late, guard.mean_late_window_s, guard.max_late_s = (float(gf[k]) for k in (
            G_WINDOW_LATE, G_MEAN_WINDOW, G_MAX_LATE))
        guard._first_tick_s, guard._on_time_since, guard._calm_since = (_none(gf[k]) for k in (
            G_FIRST_TICK, G_ON_TIME_SINCE, G_CALM_SINCE))
        guard._window_steps, guard.ticks, guard.late_ticks, guard.dropped_steps, guard.holds = (int(gi[k]) for k in (
            GI_WINDOW_STEPS, GI_TICKS, GI_LATE_TICKS, GI_DROPPED, GI_HOLDS))
        guard.holding, guard.level, guard.reason = bool(gi[GI_HOLDING]), LEVELS[int(gi[GI_LEVEL])], self.reason()
        n, count = self.ring_t.shape[0], int(gi[GI_COUNT])
        first = (int(gi[GI_HEAD]) - count) % n
        guard._window = collections.deque(
            (float(self.ring_t[(first + k) % n]), int(self.ring_steps[(first + k) % n]),
             float(self.ring_late[(first + k) % n])) for k in range(count))


# -- Adoption: a policy object whose state *is* the arrays (for a hot path that runs its samples in compiled code) --
#
# A compiled sample and the Python around it (the other inputs' handlers, the status, a rare sample run in Python)
# must see one state. :func:`adopt` turns an object in place (its identity kept: every reference to it stays valid)
# into the array-backed form of its class: each attribute of the state becomes a property over the arrays above, so
# the class's own methods run on them unchanged, and a compiled call on the arrays changes what Python reads. The
# guard's ``update`` runs :func:`guard_update` (its window is the ring, which its Python steps do not know).

def _float(arrays: str, index: int) -> property:
    return property(lambda self: float(getattr(self._st, arrays)[index]),
                    lambda self, v: getattr(self._st, arrays).__setitem__(index, v))


def optional_field(arrays: str, index: int) -> property:
    """A property over ``self._st.<arrays>[index]``: a float, or None where the array holds ``nan`` (an array-backed
    form's optional time; also :class:`hil_admittance.servicer_side.ArrayJointsSide`'s)."""
    return property(lambda self: _none(getattr(self._st, arrays)[index]),
                    lambda self, v: getattr(self._st, arrays).__setitem__(index, _nan(v)))


def array_field(name: str) -> property:
    """A property over the array ``self._st.<name>`` itself: a value set is copied into it (the array stays the
    same, so a compiled call that holds it sees every value)."""
    return property(lambda self: getattr(self._st, name),
                    lambda self, v: getattr(self._st, name).__setitem__(Ellipsis, v))


def _int(arrays: str, index: int, kind=int) -> property:
    return property(lambda self: kind(getattr(self._st, arrays)[index]),
                    lambda self, v: getattr(self._st, arrays).__setitem__(index, int(v)))


def _coded(arrays: str, index: int, codes: tuple) -> property:
    return property(lambda self: codes[int(getattr(self._st, arrays)[index])],
                    lambda self, v: getattr(self._st, arrays).__setitem__(index, codes.index(v)))


class ArrayPacer(StepPacer):
    """A :class:`StepPacer` adopted by :func:`adopt`: its state is ``self._st`` (a :class:`PacerState`), its
    :meth:`due` and :meth:`skip_to` the compiled policies on it."""

    t0_s, dt_s, last_late_s = _float('pf', P_T0), _float('pf', P_DT), _float('pf', P_LAST_LATE)
    steps_done, overruns = _int('pi', P_STEPS), _int('pi', P_OVERRUNS)
    last_dropped, max_catch_up = _int('pi', P_DROPPED), _int('pi', P_MAX_CATCH_UP)

    def due(self, now_s: float) -> int:
        return int(pacer_due(self._st.pf, self._st.pi, float(now_s)))

    def skip_to(self, now_s: float) -> int:
        return int(pacer_skip_to(self._st.pf, self._st.pi, float(now_s)))


class ArrayWatch(InputWatch):
    """An :class:`InputWatch` adopted by :func:`adopt`: its state is ``self._st`` (a :class:`WatchState`)."""

    timeout_s, start_timeout_s = _float('wf', W_TIMEOUT), _float('wf', W_START_TIMEOUT)
    recover_after_s = _float('wf', W_RECOVER_AFTER)
    started_s, last_s = optional_field('wf', W_STARTED), optional_field('wf', W_LAST)
    _healthy_since = optional_field('wf', W_HEALTHY)
    state, auto_recover = _coded('wi', W_STATE, WATCH_STATES), _int('wi', W_AUTO, bool)
    stale_events, recoveries = _int('wi', W_STALE_EVENTS), _int('wi', W_RECOVERIES)
    start_timeouts, samples = _int('wi', W_START_TIMEOUTS), _int('wi', W_SAMPLES)

    def sample(self, now_s: float) -> None:
        """:meth:`InputWatch.sample`, compiled (:func:`watch_sample`)."""
        watch_sample(self._st.wf, self._st.wi, float(now_s))

    def update(self, now_s: float) -> str:
        """:meth:`InputWatch.update`, compiled (:func:`watch_update`)."""
        return WATCH_STATES[watch_update(self._st.wf, self._st.wi, float(now_s))]

    @property
    def usable(self) -> bool:
        return self._st.wi[W_STATE] == S_OK


class ArrayGuard(OverloadGuard):
    """An :class:`OverloadGuard` adopted by :func:`adopt`: its state is ``self._st`` (a :class:`GuardState`); its
    :meth:`update` is :func:`guard_update` on it (the same steps, ``test_policy_kernel``)."""

    dt_s, warn_late_s, hold_late_s = _float('gf', G_DT), _float('gf', G_WARN), _float('gf', G_HOLD)
    recover_after_s, mean_late_s, window_s = _float('gf', G_RECOVER), _float('gf', G_MEAN_LATE), _float('gf', G_WINDOW)
    _window_late, mean_late_window_s = _float('gf', G_WINDOW_LATE), _float('gf', G_MEAN_WINDOW)
    max_late_s, _first_tick_s = _float('gf', G_MAX_LATE), optional_field('gf', G_FIRST_TICK)
    _on_time_since, _calm_since = optional_field('gf', G_ON_TIME_SINCE), optional_field('gf', G_CALM_SINCE)
    _window_steps, holding = _int('gi', GI_WINDOW_STEPS), _int('gi', GI_HOLDING, bool)
    level, policy = _coded('gi', GI_LEVEL, LEVELS), _coded('gi', GI_POLICY, POLICY_CODES)
    ticks, late_ticks = _int('gi', GI_TICKS), _int('gi', GI_LATE_TICKS)
    dropped_steps, holds = _int('gi', GI_DROPPED), _int('gi', GI_HOLDS)

    @property
    def reason(self) -> str:
        return self._st.reason()

    @reason.setter
    def reason(self, text: str) -> None:
        self._st.kept_reason = text
        self._st.gi[GI_REASON] = R_KEPT

    @property
    def _window(self) -> collections.deque:
        """The window's ticks, oldest first (a copy: the ring is the state)."""
        st = self._st
        n, count = st.ring_t.shape[0], int(st.gi[GI_COUNT])
        first = (int(st.gi[GI_HEAD]) - count) % n
        return collections.deque((float(st.ring_t[(first + k) % n]), int(st.ring_steps[(first + k) % n]),
                                  float(st.ring_late[(first + k) % n])) for k in range(count))

    def update(self, now_s: float, late_s: float, dropped: int, steps: int = 1) -> bool:
        changed = self._st.update(now_s, late_s, dropped, steps)
        if changed < 0:
            raise ConfigError(f'overload guard: more than {self._st.ring_t.shape[0]} ticks in its window of '
                              f'{self.window_s:g} s')
        return bool(changed)


class HeldState:
    """A :class:`HeldInput`'s state as ``(value, stamp)``: its value's array (written in place) and its stamp in a
    1-array (``nan``: nothing held yet)."""

    def __init__(self, held: HeldInput):
        self.value = np.array(held.value, dtype=float)
        self.stamp = np.array([_nan(held.stamp_s)])


class ArrayHeld(HeldInput):
    """A :class:`HeldInput` adopted by :func:`adopt`: its state is ``self._st`` (a :class:`HeldState`); a value set
    is copied into the held array (of the size first held)."""

    stamp_s = optional_field('stamp', 0)
    value = array_field('value')

    def set(self, value, now_s: float) -> None:
        self._st.value[...] = value
        self._st.stamp[0] = now_s


_ADOPTED = {StepPacer: (ArrayPacer, PacerState), InputWatch: (ArrayWatch, WatchState),
            OverloadGuard: (ArrayGuard, GuardState), HeldInput: (ArrayHeld, HeldState)}


def adopt(obj):
    """Turn ``obj`` (a :class:`StepPacer`, :class:`InputWatch`, :class:`OverloadGuard` or :class:`HeldInput`, exactly)
    into its array-backed form in place and return its state object (:class:`PacerState`, :class:`WatchState`,
    :class:`GuardState`, :class:`HeldState`), whose arrays the compiled policies take. Adopting an adopted object
    returns its state. A guard's ring is made to hold its whole window (:data:`RING` ticks at least)."""
    if isinstance(obj, (ArrayPacer, ArrayWatch, ArrayGuard, ArrayHeld)):
        return obj._st
    if type(obj) not in _ADOPTED:
        raise ConfigError(f'policy_kernel.adopt: {type(obj).__name__} has no array-backed form')
    cls, state = _ADOPTED[type(obj)]
    # a guard's ring holds its whole window: at most one tick per step (each runs one at least), and some slack
    st = state(obj, ring=max(RING, int(obj.window_s / obj.dt_s) + 16)) if cls is ArrayGuard else state(obj)
    for name in [k for k in vars(obj) if isinstance(getattr(cls, k, None), property)]:
        del obj.__dict__[name]          # the class's properties read the arrays from now on
    obj.__class__ = cls
    obj._st = st
    return st


def warm_up() -> None:
    """Compile (or load from the cache) the policies with the types the adopted objects pass, on scratch states: a
    node that adopts them calls this where it starts, not in its first sample (``./dev`` runs it at install)."""
    pacer = PacerState(StepPacer(1e-3, 0.0))
    pacer_due(pacer.pf, pacer.pi, 0.0)
    pacer_skip_to(pacer.pf, pacer.pi, 0.0)
    watch = WatchState(InputWatch('warm_up', 1.0))
    watch_sample(watch.wf, watch.wi, 0.0)
    watch_update(watch.wf, watch.wi, 0.0)
    held_fresh(0.0, 0.0, 1.0)
    measurement_time(0, 0, True, 0.0)          # the types the Python callers pass (int stamps, a bool, a float)
    GuardState(OverloadGuard(1e-3, 1e-3, 1e-3, 0.0), ring=2).update(0.0, 0.0, 0, 1)


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_common.policy_kernel: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
