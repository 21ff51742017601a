"""The docking scenario YAML (``share/hil_docking/scenarios/cisas_docking.yaml``).

:func:`load_docking_scenario` reads it with :class:`hil_common.fields.Fields` (errors name
the field) into a :class:`DockingScenario`, the single source of truth of the lockstep
mission runner and the demo. Plain Python, no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hil_common.fields import Fields, ScenarioError
from hil_docking.contact import COMPENSATIONS, FacilityContact, SpringDashpot

PACKAGE_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DockingScenario:
    name: str
    altitude_m: float
    start_lvlh_m: np.ndarray
    approach_duration_s: float
    closing_speed_m_s: float
    chaser_mass_kg: float
    target_mass_kg: float
    orbital_contact: SpringDashpot
    facility: FacilityContact
    loop_delay_s: float
    control_period_s: float
    compensation: str
    post_impact_duration_s: float
    dock_position_in_base_m: np.ndarray

    @property
    def docking_axis_lvlh(self) -> np.ndarray:
        """Unit vector chaser -> target along which the interfaces meet: the approach direction."""
        return -self.start_lvlh_m / np.linalg.norm(self.start_lvlh_m)

    @property
    def delay_steps(self) -> int:
        return int(round(self.loop_delay_s / self.control_period_s))


def scenario_path(name: str = 'cisas_docking') -> Path:
    """The installed scenario (ament share), else the source tree's."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = Path(get_package_share_directory('hil_docking')) / 'scenarios' / f'{name}.yaml'
        if path.is_file():
            return path
    except (ImportError, LookupError, ValueError):
        pass
    return PACKAGE_DIR / 'scenarios' / f'{name}.yaml'


def load_docking_scenario(path: str | Path | None = None) -> DockingScenario:
    f = Fields.load(scenario_path() if path is None else path)
    f.refuse_unknown(['name', 'orbit', 'approach', 'spacecraft', 'contact', 'facility', 'post_impact', 'arm'])
    orbit, appr, sc, con, fac, post, arm = (f.section(k) for k in (
        'orbit', 'approach', 'spacecraft', 'contact', 'facility', 'post_impact', 'arm'))
    orbit.refuse_unknown(['altitude_m'])
    appr.refuse_unknown(['start_lvlh_m', 'duration_s', 'closing_speed_m_s'])
    sc.refuse_unknown(['chaser_mass_kg', 'target_mass_kg'])
    con.refuse_unknown(['stiffness_n_m', 'damping_ns_m'])
    fac.refuse_unknown(['mockup_stiffness_n_m', 'mockup_damping_ns_m', 'spring_stiffness_n_m', 'loop_delay_s',
                        'control_period_s', 'compensation'])
    post.refuse_unknown(['duration_s'])
    arm.refuse_unknown(['dock_position_in_base_m'])
    start = np.array(appr.vector('start_lvlh_m', 3))
    if not np.linalg.norm(start) > 0.0:
        raise appr.error('start_lvlh_m', 'must not be the docking point itself')
    delay = fac.number('loop_delay_s', positive=True)
    period = fac.number('control_period_s', positive=True)
    if abs(delay / period - round(delay / period)) > 1e-9 or round(delay / period) < 1:
        raise fac.error('loop_delay_s', f'must be a whole number (>= 1) of control periods ({period!r} s)')
    return DockingScenario(
        name=f.string('name', 'cisas_docking'),
        altitude_m=orbit.number('altitude_m', positive=True),
        start_lvlh_m=start,
        approach_duration_s=appr.number('duration_s', positive=True),
        closing_speed_m_s=appr.number('closing_speed_m_s', positive=True),
        chaser_mass_kg=sc.number('chaser_mass_kg', positive=True),
        target_mass_kg=sc.number('target_mass_kg', positive=True),
        orbital_contact=SpringDashpot(con.number('stiffness_n_m', positive=True), con.number('damping_ns_m', min=0.0)),
        facility=FacilityContact(fac.number('mockup_stiffness_n_m', positive=True),
                                 fac.number('mockup_damping_ns_m', min=0.0),
                                 fac.number('spring_stiffness_n_m', positive=True)),
        loop_delay_s=delay,
        control_period_s=period,
        compensation=fac.string('compensation', 'pole', choices=COMPENSATIONS),
        post_impact_duration_s=post.number('duration_s', positive=True),
        dock_position_in_base_m=np.array(arm.vector('dock_position_in_base_m', 3)),
    )


__all__ = ['DockingScenario', 'ScenarioError', 'load_docking_scenario', 'scenario_path']
