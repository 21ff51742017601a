"""The docking closed through the MuJoCo lab twin, lockstep (:mod:`hil_docking.twin_mission`), and its
pictures. Judged against independent references: the orbital contact's closed form (Eq. 15), the
emulated facility's lockstep loop (the ideal robot), and the lumped law ``k_L x + b_L x'`` that the
twin's probe must realise physically."""

import numpy as np
import pytest

from hil_docking.live import TWIN_RESTITUTION_TOL
from hil_docking.mission import run_mission
from hil_docking.scenario import load_docking_scenario
from hil_docking.twin_mission import twin_mission_with_pictures
from hil_lab_twin.animation import frame_difference

from test_cisas_live import short_scenario


def test_the_twin_docks_as_the_facility_loop_and_its_pictures_show_the_probe_meet_the_plate(tmp_path):
    path = short_scenario(tmp_path)
    sc = load_docking_scenario(path)
    emulated = run_mission(sc, difference_robot_pose=True).summary
    result, files = twin_mission_with_pictures(path, tmp_path, every_s=0.05)
    assert result['complete']
    orbital = emulated['restitution_orbital']
    assert abs(result['restitution'] / orbital - 1.0) <= TWIN_RESTITUTION_TOL          # measured +0.2 %
    assert result['impulse_n_s'] == pytest.approx(emulated['impulse_n_s'], rel=0.03)   # measured +0.3 %
    assert result['closing_speed_in_m_s'] == pytest.approx(sc.closing_speed_m_s, rel=0.03)
    # the force the driver chain gives follows the probe's spring-damper of the measured penetration
    t, x, f = result['t_s'], result['penetration_m'], result['force_n']
    law = np.where(x > 0.0, sc.facility.lumped.stiffness_n_m * x + sc.facility.lumped.damping_ns_m * np.gradient(x, t), 0.0)
    assert x.max() > 0.004 and f.max() == pytest.approx(law.max(), rel=0.03)
    # pictures: both views animated, and the probe's contact changes what they show
    assert {p.name for p in files} >= {'twin_docking_facility.mp4', 'twin_docking_contact.mp4',
                                       'twin_docking_contact_contact.png'}
    frames, times = result['frames'], result['frame_times_s']
    deepest = t[int(np.argmax(x))]
    k = int(np.argmin(np.abs(times - deepest)))
    for view in ('facility', 'contact'):
        shots = frames[view]
        assert len(shots) == len(times) > 10
        assert shots[0].std() > 10.0                                      # not a blank picture
        assert frame_difference(shots[0], shots[k]) > 0.002               # the arm moved to the plate
