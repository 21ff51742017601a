"""The compiled virtual-environment step (seed 001 Eqs. 4-10, issue 17) against the readable one.

Its roll-pitch-yaw pieces against Pinocchio's ``rpy`` module, the whole step against
``VirtualEnvironment.step_reference`` over runs with a full inertia tensor, tumbling, large
angles (wrapping) and every gain switch, to 1e-12; at gimbal lock both refuse by name and the
compiled step leaves the state as it was.
"""

import copy

import numpy as np
import pinocchio as pin
import pytest

from hil_common.errors import Unreachable
from hil_teleop.gains import TeleopGains
from hil_teleop.virtual import VirtualContact, VirtualEnvironment, VirtualPayload
from hil_teleop.virtual_kernel import _euler_rate_to_omega, _omega_to_euler_rate, rpy_matrix

TOL = 1e-12
INERTIA = np.array([[900.0, 35.0, -20.0], [35.0, 1100.0, 15.0], [-20.0, 15.0, 1300.0]])


def test_rpy_pieces_match_pinocchio():
    rng = np.random.default_rng(1)
    world = pin.ReferenceFrame.WORLD
    for _ in range(200):
        phi = rng.uniform(-np.pi, np.pi, 3)
        phi[1] = rng.uniform(-1.5, 1.5)
        r = np.empty((3, 3))
        rpy_matrix(phi, r)
        np.testing.assert_allclose(r, pin.rpy.rpyToMatrix(phi), rtol=0.0, atol=TOL)
        rates = rng.normal(size=3)
        np.testing.assert_allclose(_euler_rate_to_omega(phi, *rates), pin.rpy.computeRpyJacobian(phi, world) @ rates,
                                   rtol=0.0, atol=TOL)
        np.testing.assert_allclose(_omega_to_euler_rate(phi, *rates),
                                   pin.rpy.computeRpyJacobianInverse(phi, world) @ rates, rtol=TOL, atol=TOL)


def _environment(gains, x0):
    payload = VirtualPayload(4500.0, INERTIA, x0=x0)
    return VirtualEnvironment(gains, payload, VirtualContact([2e4] * 3 + [2e3] * 3, [2e2] * 3 + [2e1] * 3), dt=2e-3)


@pytest.mark.parametrize('switches', [{}, {'force_feedback': False}, {'damping': False, 'scaling': False},
                                      {'coupling': False}], ids=['all', 'no_feedback', 'no_damping_scaling', 'no_coupling'])
def test_compiled_step_matches_the_reference_step(switches):
    """Random operator forces (large enough to tumble the payload and carry yaw across +-pi)."""
    rng = np.random.default_rng(len(switches))
    gains = TeleopGains(k_s=[2e-3] * 3 + [5e-3] * 3, **switches)
    x0 = np.array([0.3, -0.2, 1.0, 0.5, -0.4, 3.1])
    fast = _environment(gains, x0)
    ref = copy.deepcopy(fast)
    worst, yaws = 0.0, []
    for k in range(1500):
        f_m = rng.normal(0.0, 40.0, 6) + [0.0, 0.0, 0.0, 0.0, 0.0, 20.0]    # and a steady yaw command
        s_f, s_r = fast.step(f_m), ref.step_reference(f_m)
        for a, b in ((s_f.x_vir, s_r.x_vir), (s_f.v_vir, s_r.v_vir), (s_f.f_vir, s_r.f_vir), (s_f.x_t, s_r.x_t),
                     (s_f.v_t, s_r.v_t), (s_f.v_vir_r, s_r.v_vir_r), (fast.v_vir_prev, ref.v_vir_prev)):
            worst = max(worst, float(np.abs(a - b).max()) / max(1.0, float(np.abs(b).max())))
        yaws.append(s_r.x_t[5])
    assert worst < TOL
    assert s_f.t == s_r.t
    assert np.ptp(yaws) > np.pi          # the yaw did cross the wrap at +-pi


def test_gimbal_lock_is_refused_by_name_and_the_state_kept():
    for which in ('payload', 'arm'):
        x0 = np.array([0.0, 0.0, 1.0, 0.1, 0.2, 0.3])
        env = _environment(TeleopGains(), x0)
        env.step(np.ones(6))
        target = env.payload.x if which == 'payload' else env.x_vir
        target[4] = np.pi / 2 - 1e-5
        before = [a.copy() for a in (env.x_vir, env.v_vir, env.v_vir_prev, env.payload.x, env.payload.v)]
        ref = copy.deepcopy(env)
        for step in (env.step, ref.step_reference):
            with pytest.raises(Unreachable, match='gimbal lock'):
                step(np.ones(6))
        for a, b in zip(before, (env.x_vir, env.v_vir, env.v_vir_prev, env.payload.x, env.payload.v)):
            np.testing.assert_array_equal(a, b)


def test_the_kernel_has_one_specialisation_for_the_nodes_and_runners():
    """Every way the environment is built (the runners' config, the master node's parameters) passes the
    same array types: no second compilation in a node's first tick (./dev compiles one)."""
    from hil_teleop.config import TeleopConfig, earth_and_link
    from hil_teleop.virtual_kernel import virtual_step

    earth_and_link(TeleopConfig()).venv.step([1.0, 0, 0, 0, 0, 0])
    _environment(TeleopGains(k_s=1e-3, g=[5.0] * 6), [0, 0, 1, 0, 0, 0]).step(np.ones(6))
    assert len(virtual_step.signatures) == 1, virtual_step.signatures
