"""MuJoCo twin of a HIL facility (client and servicer robots, hexapod, F/T sensors).

The twin renders offscreen only; unless the environment chose otherwise, MuJoCo uses EGL
(``MUJOCO_GL=egl``), which must be set before ``mujoco`` is first imported.
"""

import os

os.environ.setdefault('MUJOCO_GL', 'egl')
