"""Lockstep runners in CPU time on one core, each beside Pinocchio's ``aba`` measured in the
same run (issue 17 targets):

* ``HilMission`` on the Envisat capture scenario (seed 004 Fig. 7 with ideal robots): >= 20x real time;
  measured over the first seconds (the figure the issue started from) and over the whole capture,
  whose post-grasp part runs the contact kinematics that the open gripper skips;
* ``AbsoluteMission`` (the "GNCDE" reference: ABA servicer, Eq. 2 client): >= 40x;
* ``TwinHilMission`` (the loop closed through the MuJoCo twin): >= 5x;
* the teleop lockstep, item 3 (seed 001 HILS 2: 4500 kg payload, 5 s delay): >= 20x.

A real-time factor is simulated seconds per CPU second of this process
(``time.process_time``), so other load on the machine does not count against it. The
first ``WARM_S`` of each run (imports, compiled kernels loaded from the cache) are excluded.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aba_reference import aba_cpu_us  # noqa: E402

WARM_S = 0.2


def _factor(name: str, sim_s: float, cpu_s: float, target: float, aba_us: float, steps: int) -> None:
    factor = sim_s / cpu_s
    per_step = cpu_s / steps * 1e6
    print(f'  {name:<46s} {sim_s:5.1f} s in {cpu_s:6.2f} s CPU: {factor:6.2f}x real time, '
          f'{per_step:7.1f} us CPU/step ({per_step / aba_us:5.1f}x aba)   '
          f'(target >= {target:.0f}x: {"met" if factor >= target else "MISSED"})', flush=True)


def _mission(cls, scenario, duration_s, **kwargs):
    m = cls(scenario, **kwargs)
    m.command = m.controller.update(m.t, *m.onboard_states()) if m.controller is not None else None
    m.steps(int(round(WARM_S / m.dt)))
    t0 = time.process_time()
    n = int(round(duration_s / m.dt))
    every = max(1, int(round(0.05 / m.dt)))
    for i in range(0, n, every):          # as MissionLoop.run: a record, then the steps to the next one
        m.record_sample()
        m.steps(min(every, n - i))
    return time.process_time() - t0, n


def main(duration_s: float = 3.0) -> None:
    from hil_bringup.runners.mission import AbsoluteMission, HilMission
    from hil_bringup.scenario import load_scenario

    aba = aba_cpu_us()
    print(f'lockstep runners, CPU time of this process; pin.aba (7-DOF free-flyer) {aba:.2f} us CPU per call:')
    sc = load_scenario('envisat_capture')
    whole_s = float(sc.mission['duration_s'])
    for cls, target in ((HilMission, 20.0), (AbsoluteMission, 40.0)):
        cpu, steps = _mission(cls, sc, duration_s)
        _factor(f'{cls.__name__} (Envisat capture, first {duration_s:.0f} s)', duration_s, cpu, target, aba, steps)
        # The whole capture: sync, approach, grasp and post-grasp (the gripper latched: contact kinematics).
        cpu, steps = _mission(cls, sc, whole_s)
        _factor(f'{cls.__name__} (whole capture, {whole_s:.0f} s)', whole_s, cpu, target, aba, steps)

    from hil_bringup.runners.twin_validation import ArmHold, TwinHilMission, validation_scenario
    from hil_dynamics.servicer import ServicerModel

    vsc = validation_scenario(sc)
    v = vsc.unforced_validation
    model = ServicerModel(vsc.servicer.urdf, vsc.servicer.ee_frame)
    # as the other runners (and MissionLoop.run): a record every 0.05 s, the steps between in MissionLoop.steps
    cpu, steps = _mission(TwinHilMission, vsc, duration_s,
                          controller=ArmHold(model, vsc.servicer.q_arm_0, v.arm_hold_bandwidth_rad_s))
    _factor('TwinHilMission (twin in the loop, unforced)', duration_s, cpu, 5.0, aba, steps)

    from hil_teleop.config import TeleopConfig
    from hil_bringup.runners.teleop import run_teleop
    from hil_bringup.runners.teleop_experiments import hils2_operator

    config = TeleopConfig(payload_mass_kg=4500.0, delay_s=5.0)
    teleop_s = 4.0 * duration_s
    run_teleop(config, hils2_operator(config.gains), WARM_S)
    t0 = time.process_time()
    run_teleop(config, hils2_operator(config.gains), teleop_s)
    _factor('teleop lockstep, item 3 (4500 kg, 5 s delay)', teleop_s, time.process_time() - t0, 20.0, aba,
            int(round(teleop_s / config.dt)))


if __name__ == '__main__':
    main()
