"""Render a lockstep run of the facility: a PNG of the scene and an animated PNG of the motion.

``lab_twin_snapshot --out DIR [--hexapod] [--seconds 4] [--fps 20]`` (needs an offscreen
GL: ``MUJOCO_GL=egl``, the package default). The client table tracks a 6-D sinusoidal pose
stream through its motion table (delay-compensated), as in the tracking tests, while
the servicer robot holds its pose; frames are taken from the ``overview`` camera.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from hil_lab_twin.lockstep import TableInTheLoop, response_delay
from hil_lab_twin.png import write_apng, write_png
from hil_lab_twin.scene import ServoConfig, facility_config
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import home_pose, make_kinematics, sinusoid_pose
from hil_motion_table.table import MotionTable, TableLimits

AMPLITUDE = np.array([0.06, 0.05, 0.04, 0.15, 0.15, 0.2])
FREQUENCY = np.array([0.5, 0.4, 0.6, 0.5, 0.35, 0.45])


def run(out_dir: Path, hexapod: bool = False, seconds: float = 4.0, fps: float = 20.0, width: int = 480,
        height: int = 360, camera: str = 'overview') -> dict:
    twin = LabTwin(facility_config('hexapod' if hexapod else 'serial', with_servicer=True))
    kin = make_kinematics('hexapod' if hexapod else 'ur10e')
    table = MotionTable(kin, TableLimits((-3.0,) * 3, (3.0,) * 3), period=0.004,
                        prediction_horizon=response_delay(ServoConfig()))
    loop = TableInTheLoop(twin, 'client', table, period=0.004)
    center = home_pose(kin)
    frames, every = [], max(1, int(round(1.0 / (fps * loop.period))))
    for k in range(int(seconds / loop.period)):
        pose, _ = sinusoid_pose(k * loop.period, center, -AMPLITUDE, FREQUENCY, phase=np.full(6, math.pi / 2),
                                offset=AMPLITUDE)
        loop.step(pose)
        if k % every == 0:
            frames.append(twin.render(width, height, camera))
    out_dir.mkdir(parents=True, exist_ok=True)
    write_png(out_dir / 'lab_twin.png', twin.render(960, 720, camera))
    write_apng(out_dir / 'lab_twin.apng', frames, fps)
    twin.close()
    return {'frames': len(frames), **loop.summary()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=Path('lab_twin_render'), help='output directory')
    parser.add_argument('--hexapod', action='store_true', help='hexapod client table instead of the UR10e')
    parser.add_argument('--seconds', type=float, default=4.0)
    parser.add_argument('--fps', type=float, default=20.0)
    args = parser.parse_args(argv)
    summary = run(args.out, args.hexapod, args.seconds, args.fps)
    print(f"wrote {args.out / 'lab_twin.png'} and {args.out / 'lab_twin.apng'} ({summary['frames']} frames); "
          f"client tracking RMS {1e3 * summary['rms_position_m']:.3f} mm")
    return 0


if __name__ == '__main__':
    sys.exit(main())
