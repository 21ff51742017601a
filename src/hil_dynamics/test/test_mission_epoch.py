"""One mission clock: ``advance_nominal`` moves an admittance's nominal (seed 004 Eq. 4) on by the time
between the mission's t = 0 and the node's first step, keeping its relative state (Eq. 23).

References: the closed-form steady spin about a principal axis, and a tri-axial tumble integrated in
the absolute formulation (``AbsoluteRigidBody``, no nominal). The client's and the servicer's
nominals, moved on by the same time, are the same nominal: that is what the live graph needs of its
two admittance nodes, started at different instants."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.client import AbsoluteRigidBody, ClientAdmittance, unforced_nominal
from hil_dynamics.models import servicer_lbr_urdf
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.servicer import ServicerAdmittance, ServicerModel

ENVISAT = RigidBody(7828.0, np.diag([17023.0, 129112.0, 124826.0]))
SPIN_Y = np.array([0.0, 0.0, 0.0, 0.0, -0.04363323129985824, 0.0])       # seed 004 §III-C: -2.5 deg/s about y
TUMBLE = np.array([0.01, -0.02, 0.005, 0.02, -0.04, 0.03])
DT = 0.004


def _pose_error(a: pin.SE3, b: pin.SE3) -> float:
    return float(np.linalg.norm(pin.log6(a.actInv(b)).vector))


def test_a_spin_about_the_major_axis_moves_on_as_the_closed_form():
    g0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), np.array([1.0, 2.0, -0.5]))
    g, v = unforced_nominal(ENVISAT, g0, SPIN_Y, 3.5 + 0.0013, DT)          # 875 steps and a short one
    assert _pose_error(g, g0 * pin.exp6(pin.Motion(SPIN_Y * 3.5013))) < 1e-12
    np.testing.assert_allclose(v, SPIN_Y, atol=1e-15)


def test_a_tumbling_nominal_moves_on_as_the_absolute_integration():
    g, v = unforced_nominal(ENVISAT, pin.SE3.Identity(), TUMBLE, 2.0, DT)
    absolute = AbsoluteRigidBody(ENVISAT, TUMBLE)
    for _ in range(500):
        absolute.step(np.zeros(6), DT)
    assert _pose_error(g, absolute.pose_in_orbit) < 1e-9
    np.testing.assert_allclose(v, absolute.twist_body, atol=1e-12)
    assert _pose_error(g, pin.exp6(pin.Motion(TUMBLE * 2.0))) > 1e-3        # not a steady spin: the test can fail


def test_the_client_and_the_servicer_moved_on_by_one_time_share_one_nominal_and_keep_their_relative_states():
    client = ClientAdmittance(ENVISAT, TUMBLE)
    client.step(np.array([5.0, 0.0, 0.0, 0.0, 1.0, 0.0]), DT)              # some relative motion first
    rel_c = (client.state.pose_client_in_nominal, client.state.twist_client_rel_body.copy())
    model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    g_s0 = pin.SE3(pin.rpy.rpyToMatrix(0.0, 1.5707963267948966, 0.0), np.array([-4.8, -0.2, 1.1]))
    v_s0 = np.array([0.001, 0.0, -0.002, 0.0, 0.0005, 0.0])
    servicer = ServicerAdmittance(model, ENVISAT, TUMBLE, None, g_s0, v_s0)
    t_c, t_s = client.state.t, servicer.state.t
    client.advance_nominal(1.2 - DT, DT)
    servicer.advance_nominal(1.2, DT)
    assert client.state.t == pytest.approx(t_c + 1.2 - DT) and servicer.state.t == pytest.approx(t_s + 1.2)
    # the client's nominal had one step already: both now stand at the nominal's t = 1.2 s
    assert _pose_error(client.state.pose_nominal_in_orbit, servicer.state.pose_nominal_in_orbit) < 1e-12
    np.testing.assert_allclose(client.state.twist_nominal_body, servicer.state.twist_nominal_body, atol=1e-14)
    assert client.state.pose_client_in_nominal == rel_c[0]
    np.testing.assert_array_equal(client.state.twist_client_rel_body, rel_c[1])
    assert servicer.state.pose_base_in_nominal == g_s0
    np.testing.assert_array_equal(servicer.state.twist_base_rel_body, v_s0)
    # the absolute base (Eq. 23) is the relative pose carried by the moved-on nominal
    g_b, _ = servicer.state.absolute()
    assert _pose_error(g_b, servicer.state.pose_nominal_in_orbit * g_s0) < 1e-12
    # and the compiled client step goes on from the moved-on state
    client.step(np.zeros(6), DT)
    assert client.state.t == pytest.approx(t_c + 1.2)


def test_bad_durations_are_refused():
    with pytest.raises(ValueError, match='duration_s'):
        unforced_nominal(ENVISAT, pin.SE3.Identity(), SPIN_Y, -1.0, DT)
    with pytest.raises(ValueError, match='duration_s'):
        unforced_nominal(ENVISAT, pin.SE3.Identity(), SPIN_Y, 1.0, 0.0)


def test_the_reused_free_integrator_gives_what_a_new_one_gives_from_any_state_and_thread():
    """A held node moves its nominal on at every step with one integrator's constants per body, in one compiled
    call (:func:`unforced_nominal`): each call must give what a new integrator from that state gives, bit for
    bit (whole steps, and a shorter last one), whatever was integrated before and in whichever thread; a
    non-finite twist is still refused."""
    import threading

    def fresh(g0, v0, duration):
        free = ClientAdmittance(ENVISAT, v0, g0)
        n = int(duration / DT + 1e-9)
        for _ in range(n):
            free.step(np.zeros(6), DT)
        if duration - n * DT > 1e-12:                          # the last step shorter
            free.step(np.zeros(6), duration - n * DT)
        return free.state.pose_nominal_in_orbit, free.state.twist_nominal_body

    rng = np.random.default_rng(7)
    cases = [(pin.SE3.Random(), rng.normal(0.0, 0.05, 6), DT * rng.integers(1, 6)) for _ in range(6)]
    cases += [(pin.SE3.Random(), rng.normal(0.0, 0.05, 6), DT * (k + rng.uniform(0.1, 0.9))) for k in range(3)]
    got = [unforced_nominal(ENVISAT, g0, v0, d, DT) for g0, v0, d in cases]
    other = []
    worker = threading.Thread(target=lambda: other.extend(unforced_nominal(ENVISAT, g0, v0, d, DT) for g0, v0, d in cases))
    worker.start()
    worker.join()
    for (g0, v0, d), (g, v), (g_t, v_t) in zip(cases, got, other):
        g_ref, v_ref = fresh(g0, v0, d)
        np.testing.assert_array_equal(g.homogeneous, g_ref.homogeneous)
        np.testing.assert_array_equal(v, v_ref)
        np.testing.assert_array_equal(g_t.homogeneous, g_ref.homogeneous)
        np.testing.assert_array_equal(v_t, v_ref)
    with pytest.raises(ValueError, match='finite'):
        unforced_nominal(ENVISAT, pin.SE3.Identity(), np.array([0.0, np.nan, 0, 0, 0, 0]), DT, DT)
    # and the next call after the refusal starts from its own state, not from the refused one
    g, v = unforced_nominal(ENVISAT, cases[0][0], cases[0][1], cases[0][2], DT)
    np.testing.assert_array_equal(v, fresh(*cases[0])[1])
    # A re-basing ramp gives the nominal a new body at every step: the integrators kept stay bounded (an
    # integrator holds its body, so a cache keyed weakly on the body kept all 200 of them)
    from hil_dynamics import client

    for k in range(200):
        unforced_nominal(RigidBody(100.0 + k, [1.0, 2.0, 2.5]), pin.SE3.Identity(), SPIN_Y, DT, DT)
    assert len(client._free_integrators.by_body) <= client._FREE_INTEGRATORS_KEPT
