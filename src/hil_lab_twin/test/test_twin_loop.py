"""``TwinLoop`` (the twin's step in two compiled calls around ``mj_step``, issue 17) against ``LabTwin.step``.

Two twins of the same facility take the same commands at every step: one through ``command_positions``,
``command_efforts`` and ``step`` (the readable step), the other through a :class:`TwinLoop`, left and entered again
halfway. Everything MuJoCo integrates, every F/T reading and the twins' counts must be the same to the bit, and the
twin stepped on in Python after ``leave`` must stay so (``leave`` handed back the whole state).
"""

import dataclasses

import numpy as np
import pytest

from hil_common.errors import ConfigError, InputError
from hil_lab_twin.scene import ArmConfig, FtConfig, TwinConfig, facility_config
from hil_lab_twin.twin import LabTwin
from hil_lab_twin.twin_loop import TwinLoop

STEPS = 600            # past a block of 256 noise rows of the 1 kHz channels


def _config(kind: str) -> TwinConfig:
    """The facility with both robots and the arm; the client's sensor at 250 Hz (a reading averages four steps),
    every sensor with an offset and noise."""
    robots = tuple(dataclasses.replace(r, ft=FtConfig(rate_hz=250.0 if i == 0 else 1000.0,
                                                      bias=(1.5, -0.8, 2.0, 0.05, -0.03, 0.02), seed=11 + i))
                   for i, r in enumerate(facility_config(kind, with_servicer=True).robots))
    return TwinConfig(robots=robots, arm=ArmConfig(delay_s=0.002, wrist_ft=FtConfig(bias=(0.3,) * 6, seed=7)))


def _commands(twin: LabTwin, k: int) -> dict:
    """Step ``k``'s commands: each robot's start joints plus a few-degree wave (m for hexapod legs), the arm's
    efforts; at step 100 the client's command has a NaN (refused and counted)."""
    out = {}
    for i, ns in enumerate(twin.position_robots):
        q0 = twin._robots[ns].build.q_initial
        amp = 0.01 if twin._robots[ns].build.kind == 'hexapod' else 0.05
        out[ns] = q0 + amp * np.sin(2 * np.pi * (0.7 + 0.3 * i) * k * twin.dt + np.arange(q0.size))
    if k == 100:
        out['client'] = out['client'].copy()
        out['client'][2] = np.nan
    for ns in twin.torque_arms:
        out[ns] = 2.0 * np.cos(2 * np.pi * 1.1 * k * twin.dt + np.arange(7))
    return out


def _assert_same(a: LabTwin, b: LabTwin) -> None:
    for field in ('qpos', 'qvel', 'act', 'ctrl', 'qfrc_applied', 'sensordata', 'qacc'):
        assert np.array_equal(getattr(a.data, field), getattr(b.data, field)), field
    assert a.data.time == b.data.time and a.steps == b.steps
    for name in a.ft_sensor_names:
        ca, cb = a._ft[name][0], b._ft[name][0]
        assert np.array_equal(ca.wrench, cb.wrench) and ca.stamp == cb.stamp and ca.sequence == cb.sequence, name
        assert np.array_equal(ca._sum, cb._sum) and ca._count == cb._count and ca._next == cb._next, name
    for ns in a.position_robots + a.torque_arms:
        assert a.rejected_count(ns) == b.rejected_count(ns), ns
        ta, tb = a._robots.get(ns) or a._arms[ns], b._robots.get(ns) or b._arms[ns]
        assert ta.accepted == tb.accepted and ta.delay._count == tb.delay._count, ns
        assert [(t, c, kind, list(v)) for t, c, (kind, v) in sorted(ta.delay._heap)] == \
            [(t, c, kind, list(v)) for t, c, (kind, v) in sorted(tb.delay._heap)], ns


@pytest.mark.parametrize('kind', ['serial', 'hexapod'])
def test_the_compiled_twin_step_is_the_twins_own_to_the_bit(kind):
    ref, fast = LabTwin(_config(kind)), LabTwin(_config(kind))
    loop = TwinLoop(fast)
    loop.enter()
    for k in range(STEPS):
        commands = _commands(ref, k)
        for ns, values in commands.items():
            (ref.command_positions if ns in ref.position_robots else ref.command_efforts)(ns, values)
            loop.command(loop.target(ns), values)
        ref.step()
        assert loop.step()
        if k == STEPS // 2:
            loop.leave()
            _assert_same(ref, fast)
            loop.enter()
    loop.leave()
    _assert_same(ref, fast)
    assert ref.rejected_count('client') == 1 and ref._robots['client'].accepted == STEPS - 1
    # the readings are not trivial: the noise and the averaging show
    # (a channel's first reading is at the first step; the 1 kHz ones read twice a block of noise rows)
    assert ref._ft['client_ft'][0].sequence == STEPS // 4 + 1 and np.abs(ref._ft['client_ft'][0].wrench).max() > 1.0
    assert ref._ft['servicer_wrist_ft'][0].sequence == STEPS > 2 * 256
    for _ in range(50):                       # the twin's own step goes on from what leave handed back
        for ns, values in _commands(ref, STEPS).items():
            for twin in (ref, fast):
                (twin.command_positions if ns in twin.position_robots else twin.command_efforts)(ns, values)
        ref.step()
        fast.step()
    _assert_same(ref, fast)
    assert np.abs(ref.data.qvel).max() > 1e-3       # the robots moved


def test_the_loop_refuses_what_it_does_not_step_and_names_it():
    twin = LabTwin(_config('serial'))
    loop = TwinLoop(twin)
    with pytest.raises(InputError, match='client: 6 values expected'):
        loop.command(loop.target('client'), np.zeros(5))
    twin.command_trajectory('client', twin.joint_names('client'), [(0.1, twin._robots['client'].build.q_initial)])
    with pytest.raises(ConfigError, match='client: a trajectory command in flight'):
        loop.enter()
    twin.step(5)                              # the trajectory starts: in progress until 0.1 s after its receipt
    with pytest.raises(ConfigError, match='client: a joint trajectory in progress'):
        loop.enter()
    twin.push_payload('client', (1.0, 0.0, 0.0))
    assert loop.supports() == 'a push on a mock-up'


def test_more_commands_in_flight_than_the_ring_holds_go_on_in_the_twins_step():
    """A client robot with an 80 ms transport delay: the 65th command finds the ring full; the loop leaves and the
    twin steps itself from there, the same as the readable step all along."""
    from hil_lab_twin.scene import ServoConfig
    from hil_lab_twin.twin_loop import RING

    config = _config('serial')
    slow = (dataclasses.replace(config.robots[0], servo=ServoConfig(delay_s=0.08)),) + config.robots[1:]
    config = dataclasses.replace(config, robots=slow)
    ref, fast = LabTwin(config), LabTwin(config)
    loop = TwinLoop(fast)
    loop.enter()
    stepped_in_loop = 0
    for k in range(120):
        for ns, values in _commands(ref, k).items():
            (ref.command_positions if ns in ref.position_robots else ref.command_efforts)(ns, values)
            if loop.entered:
                loop.command(loop.target(ns), values)
            else:
                (fast.command_positions if ns in fast.position_robots else fast.command_efforts)(ns, values)
        ref.step()
        if loop.entered:
            stepped_in_loop += loop.step()
        else:
            fast.step()
    assert stepped_in_loop == RING and not loop.entered
    _assert_same(ref, fast)


def test_mj_step_from_compiled_code_is_the_bindings_own():
    """``loop_mj_step`` (MuJoCo's ``mj_step`` called from compiled code at its address) against ``mujoco.mj_step``:
    two twins with the same commands, 300 steps, the same data to the bit; the time advances as MuJoCo adds it."""
    import mujoco

    from hil_lab_twin.twin_loop import loop_ft_sample, loop_mj_step, loop_pre_step

    ref, fast = LabTwin(_config('serial')), LabTwin(_config('serial'))
    loop_ref, loop = TwinLoop(ref), TwinLoop(fast)
    loop_ref.enter()
    loop.enter()
    t = fast.time
    for k in range(300):
        for ns, values in _commands(ref, k).items():
            loop_ref.command(loop_ref.target(ns), values)
            loop.command(loop.target(ns), values)
        assert loop_pre_step(ref.time, ref.dt, *loop_ref.pre_args) and loop_pre_step(t, fast.dt, *loop.pre_args)
        mujoco.mj_step(ref.model, ref.data)
        loop_mj_step(loop.mj)
        t = t + fast.dt
        assert fast.data.time == t == ref.data.time
        for twin_loop, now in ((loop_ref, ref.time), (loop, t)):
            if loop_ft_sample(now, *twin_loop.post_args):
                twin_loop.draw_used_up()
    for field in ('qpos', 'qvel', 'act', 'ctrl', 'qacc', 'sensordata'):
        assert np.array_equal(getattr(ref.data, field), getattr(fast.data, field)), field
    assert np.array_equal(loop_ref.wrench, loop.wrench) and np.abs(fast.data.qvel).max() > 1e-3
