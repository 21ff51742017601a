"""Parameters shared by the teleoperation nodes (declared with :mod:`hil_common.params`).

Plain Python: the gain parameters and their conversion to :class:`TeleopGains`, used by the
master (virtual arm, Eqs. 4-5) and the slave law (Eq. 3) so both sides read the same names.
"""

from __future__ import annotations

from hil_common.params import Param, ParameterError
from hil_teleop.gains import TeleopGains

_D = TeleopGains()


def _diag(name, default, description, **kw):
    return Param(name, [float(v) for v in default], description, length=6, **kw)


GAIN_PARAMS = [
    _diag('k_s', _D.k_s, 'Force-feedback gain K_s diagonal [(m/s)/N x3, (rad/s)/(N m) x3] (seed 001 Eq. 1-3)', min=0.0),
    _diag('g', _D.g, 'Force scaling G diagonal, master to slave [-] (Eq. 1)', min=0.0),
    _diag('k_c', _D.k_c, 'Coupling gain K_c diagonal [1/s] (Eq. 2)', min=0.0),
    _diag('d', _D.d, 'Damping gain D diagonal on v(t-dt) - v(t-2dt) [-] (Eq. 2), stable below 0.5', min=0.0,
          max=0.4999),
    Param('enable_force_feedback', True, 'Use the -K_s f term (Eqs. 3 and 5)'),
    Param('enable_coupling', True, 'Use the K_c B (x_vir - x_s) term (Eq. 3)'),
    Param('enable_damping', True, 'Use the -D (v(t-dt) - v(t-2dt)) term (Eqs. 3 and 5)'),
    Param('enable_scaling', True, 'Use G (false: G = I) (Eq. 1)'),
]


def gains_from(values: dict) -> TeleopGains:
    try:
        return TeleopGains(k_s=values['k_s'], g=values['g'], k_c=values['k_c'], d=values['d'],
                           force_feedback=values['enable_force_feedback'], coupling=values['enable_coupling'],
                           damping=values['enable_damping'], scaling=values['enable_scaling'])
    except ValueError as exc:
        name = str(exc).split(' ')[0]
        raise ParameterError(f"parameter '{name}': {exc}") from exc
