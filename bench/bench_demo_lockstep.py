"""The demo's lockstep part in CPU time (issue 17: "the demo's lockstep part gets faster"), beside Pinocchio's ``aba``
measured in the same run: stages 1-3 of ``hil_bringup.envisat_demo.run`` as the demo runs them (the unforced 60 s,
the twin-in-the-loop validation, the capture; each HIL and the absolute reference), without the plots and the
recording. The kernels are loaded before the timing (a short run of each runner)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aba_reference import aba_cpu_us  # noqa: E402


def main() -> None:
    from hil_bringup.runners.mission import AbsoluteMission, HilMission
    from hil_bringup.runners.twin_validation import run_unforced_validation
    from hil_bringup.scenario import load_scenario

    scenario = load_scenario('envisat_capture')
    HilMission(scenario).run(0.1)
    AbsoluteMission(scenario).run(0.1)
    aba = aba_cpu_us()
    print(f"the demo's lockstep part (stages 1-3), CPU time of this process; pin.aba {aba:.2f} us CPU per call:")
    unforced, capture = scenario.mission['unforced_duration_s'], scenario.mission['duration_s']
    parts = (
        ('1 unforced, HIL', unforced, lambda: HilMission(scenario, forced=False).run(unforced, record_every_s=0.1)),
        ('1 unforced, reference', unforced,
         lambda: AbsoluteMission(scenario, forced=False).run(unforced, record_every_s=0.1)),
        ('2 twin in the loop, HIL + reference', scenario.unforced_validation.duration_s,
         lambda: run_unforced_validation(scenario, record_every_s=0.1)),
        ('3 capture, HIL', capture, lambda: HilMission(scenario).run(capture)),
        ('3 capture, reference', capture, lambda: AbsoluteMission(scenario).run(capture)),
    )
    total = 0.0
    for name, simulated_s, run in parts:
        t0 = time.process_time()
        run()
        cpu = time.process_time() - t0
        total += cpu
        print(f'  {name:38s} {simulated_s:5.0f} s in {cpu:6.2f} s CPU ({simulated_s / cpu:5.1f}x real time, '
              f'{cpu / aba * 1e6:9.0f} aba)', flush=True)
    print(f'  {"total":38s}          {total:6.2f} s CPU ({total / aba * 1e6:9.0f} aba)')


if __name__ == '__main__':
    main()
