"""The free-floating servicer (the absolute reference of seed 004 §V): the compiled step against
the readable Pinocchio ``aba`` step, and both against the conservation laws of a free multibody."""

import numpy as np
import pinocchio as pin
import pytest

from hil_common.errors import ConfigError
from hil_dynamics.free_floating import FreeFloatingServicer
from servicer_scenarios import ARMS

TOL = 1e-12


def _random_state(rng, n):
    pose = pin.SE3(pin.exp3(rng.normal(0.0, 1.5, 3)), rng.normal(0.0, 5.0, 3))
    return pose, rng.normal(0.0, 0.1, 6), rng.uniform(-2.5, 2.5, n), rng.normal(0.0, 0.3, n)


def _pair(arm, rng):
    make, ee, _ = ARMS[arm]
    urdf = make()
    n = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer()).nv - 6
    state = _random_state(rng, n)
    return FreeFloatingServicer(urdf, ee, *state), FreeFloatingServicer(urdf, ee, *state), n


def _momentum_in_orbit(s: FreeFloatingServicer) -> np.ndarray:
    """``[P; L]`` of the whole servicer about the orbit origin, orbit axes."""
    cfg = np.concatenate((pin.SE3ToXYZQUAT(pin.SE3.Identity()), s.q_arm))
    m = pin.crba(s.model, s.data, cfg)
    return s.pose_base_in_orbit.act(pin.Force(m[:6] @ np.concatenate((s.twist_base_body, s.dq_arm)))).vector


def _kinetic_energy(s: FreeFloatingServicer) -> float:
    cfg = np.concatenate((pin.SE3ToXYZQUAT(pin.SE3.Identity()), s.q_arm))
    v = np.concatenate((s.twist_base_body, s.dq_arm))
    return 0.5 * float(v @ pin.crba(s.model, s.data, cfg) @ v)


@pytest.mark.parametrize('arm', ['lbr', 'ssrms'])
def test_compiled_step_matches_the_aba_step(arm):
    """Random states, inputs and step sizes (0.1 ms to 10 ms): three steps of each path agree to 1e-12.

    The inputs stay within what the arms' light wrist links can take in the longest step (an LBR
    wrist link of a few 0.01 kg m^2 under 40 N m reaches thousands of rad/s^2, and both paths diverge)."""
    rng = np.random.default_rng(21)
    for _ in range(8):
        fast, ref, n = _pair(arm, rng)
        assert fast._chain is not None
        f_b, tau, w_flange = rng.normal(0.0, 150.0, 6), rng.normal(0.0, 2.0, n), rng.normal(0.0, 10.0, 6)
        dt = 10.0 ** rng.uniform(-4.0, -2.0)
        for _ in range(3):
            fast.step(dt, f_b, tau, w_flange)
            ref.step_reference(dt, f_b, tau, w_flange)
        diff_pose = np.abs(fast.pose_base_in_orbit.homogeneous - ref.pose_base_in_orbit.homogeneous).max()
        assert diff_pose < TOL * max(1.0, np.abs(ref.pose_base_in_orbit.translation).max())
        for name in ('twist_base_body', 'q_arm', 'dq_arm'):
            a, b = getattr(fast, name), getattr(ref, name)
            assert np.abs(a - b).max() < TOL * max(1.0, np.abs(b).max()), name


@pytest.mark.parametrize('arm', ['lbr', 'ssrms'])
def test_internal_torques_conserve_momentum_and_no_torque_conserves_energy(arm):
    """Joint torques are internal: ``[P; L]`` in orbit is constant. Unactuated, the kinetic energy is too.

    2 s at 1 ms with the compiled step; RKMK4's error over that span is far below the bounds.
    """
    rng = np.random.default_rng(5)
    for tau_scale in (0.5, 0.0):
        s, _, n = _pair(arm, rng)
        h0, e0, q0 = _momentum_in_orbit(s), _kinetic_energy(s), s.q_arm.copy()
        tau = rng.normal(0.0, tau_scale, n) if tau_scale else np.zeros(n)
        for k in range(2000):
            s.step(1e-3, np.zeros(6), tau * np.cos(3.0 * k * 1e-3), np.zeros(6))
        h1 = _momentum_in_orbit(s)
        assert np.abs(h1 - h0).max() < 1e-9 * max(1.0, np.abs(h0).max())
        assert np.abs(s.q_arm - q0).max() > 0.05       # the arm moved: the conservation is not trivial
        if not tau_scale:
            assert abs(_kinetic_energy(s) - e0) < 1e-9 * e0


def test_a_flange_wrench_changes_the_momentum_by_its_impulse():
    """A force fixed in the orbit frame, applied at the flange (the SSRMS tip, whose links are heavy enough
    to move little in 0.2 s): ``[P; L]`` changes by its impulse about the orbit origin (trapezoidal rule).
    The wrench is held in flange axes over each step, as the contact's is, so it is re-aimed every step."""
    make, ee, _ = ARMS['ssrms']
    rng = np.random.default_rng(6)
    s, _, n = _pair('ssrms', rng)
    s.twist_base_body[:] = 0.0
    s.dq_arm[:] = 0.0
    h0 = _momentum_in_orbit(s)
    f_orbit = np.array([20.0, -10.0, 5.0])
    impulse = np.zeros(6)
    dt = 1e-3
    fid = s.model.getFrameId(ee)

    def pose_flange_in_orbit():
        pin.framesForwardKinematics(s.model, s.data, np.concatenate((pin.SE3ToXYZQUAT(s.pose_base_in_orbit), s.q_arm)))
        return pin.SE3(s.data.oMf[fid])    # a copy: data.oMf is overwritten by the next call

    for _ in range(200):
        before = pose_flange_in_orbit()
        w_flange = before.actInv(pin.Force(np.concatenate((f_orbit, np.zeros(3))))).vector    # flange axes
        s.step(dt, np.zeros(6), np.zeros(n), w_flange)
        after = pose_flange_in_orbit()
        impulse += 0.5 * dt * (before.act(pin.Force(w_flange)).vector + after.act(pin.Force(w_flange)).vector)
    change = _momentum_in_orbit(s) - h0
    scale = np.linalg.norm(f_orbit) * 0.2 * (1.0 + np.linalg.norm(before.translation))
    assert np.abs(change - impulse).max() < 1e-6 * scale


def test_bad_inputs_are_refused_by_name():
    make, ee, q0 = ARMS['lbr']
    s = FreeFloatingServicer(make(), ee, pin.SE3.Identity(), np.zeros(6), q0, np.zeros(7))
    with pytest.raises(ConfigError, match='tau_arm'):
        s.step(1e-3, np.zeros(6), np.zeros(6), np.zeros(6))
    with pytest.raises(ConfigError, match='wrench_flange'):
        s.step(1e-3, np.zeros(6), np.zeros(7), [0, 0, np.nan, 0, 0, 0])
    with pytest.raises(ConfigError, match='ee_frame'):
        FreeFloatingServicer(make(), 'no_such_frame', pin.SE3.Identity(), np.zeros(6), q0, np.zeros(7))
    np.testing.assert_array_equal(s.q_arm, q0)
