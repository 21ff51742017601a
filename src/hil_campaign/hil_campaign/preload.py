"""Import what the runners need, once per worker process.

``dask worker tcp://HOST:8786 --preload hil_campaign.preload`` (and the engine's own
LocalCluster) pays the imports (Pinocchio, MuJoCo, the rule packages) when the worker
starts instead of in its first run, so run times and the ETA are about runs.
"""

import hil_bringup.runners.mission  # noqa: F401
import hil_bringup.runners.teleop  # noqa: F401
import hil_bringup.scenario  # noqa: F401
import hil_campaign.engine  # noqa: F401
import hil_campaign.envisat  # noqa: F401
import hil_campaign.runners  # noqa: F401
import hil_docking.designer  # noqa: F401
import hil_docking.scenario  # noqa: F401
import hil_dynamics.client  # noqa: F401
import hil_snare.runner  # noqa: F401
import hil_snare.scenario  # noqa: F401
import hil_teleop.scenario  # noqa: F401
