"""Pictures of the snare capture in the lab twin (:mod:`hil_snare.pictures`): the twin of the graph's own
parameters with the mock-ups drawn in. A run is replayed from recorded joint states and ring angles; here
a short synthetic one (the robots still at the twin's start, the ring turning from its initial to its
final angle), so the test needs no live graph: the pictures must show the lab, and the wires must move."""

from types import SimpleNamespace

import numpy as np

from hil_lab_twin.animation import frame_difference
from hil_lab_twin.scene import config_from_yaml
from hil_lab_twin.twin import LabTwin
from hil_snare.graph import snare_graph
from hil_snare.pictures import render_live_run
from hil_snare.runner import lee_snare
from hil_snare.scenario import load_snare_scenario


def test_a_replayed_run_shows_the_lab_and_the_wires_closing(tmp_path):
    graph = snare_graph({})
    params = graph.node('/lab_twin').parameters
    twin = LabTwin(config_from_yaml(params['twin_config_yaml']))
    joints = {ns: (np.array([0.0]), twin.joint_state(ns).positions[None, :]) for ns in ('client', 'servicer')}
    twin.close()
    snare = lee_snare(load_snare_scenario(params['snare_scenario']).config)
    t = np.linspace(0.0, 1.0, 11)
    run = SimpleNamespace(t_sim=t, theta=np.linspace(snare.theta0, snare.theta1, len(t)),
                          wire_force_n=np.zeros((len(t), 3)), joint_states=joints)
    files, shots = render_live_run(run, graph, tmp_path, every_s=0.5)
    assert {f.name for f in files} >= {'snare_live_lab.mp4', 'snare_live_lee.mp4', 'snare_live_start_lee.png'}
    assert all(f.stat().st_size > 1000 for f in files)
    for view in ('lab', 'lee'):
        frames = shots['frames'][view]
        assert len(frames) == 3 and frames[0].std() > 10.0                    # t = 0, 0.5, 1 s; not blank
    # the robots stand still: only the wires change, and the close view shows it
    assert frame_difference(shots['frames']['lee'][0], shots['frames']['lee'][-1]) > 0.002
