"""Pictures of the snare capture in the MuJoCo lab twin (issue 18 item 2; no rclpy).

The twin's LEE and GF mock-ups are bare F/T sensors: the wire contact is computed outside MuJoCo
(:class:`hil_snare.lab.SnareWires`), so the pictures draw the mock-ups into the rendered scene
(:func:`hil_lab_twin.animation.add_capsule`): the GF shaft on the client sensor, the LEE's ring and
its three wires at the ring angle of the moment, in the LEE frame of the servicer sensor.

:func:`render_live_run` replays a live run of ``snare_capture.launch.py``: the twin of the graph's own
parameters, both robots put at their recorded joint states and the ring at its recorded angle,
every ``every_s`` of simulated time, from two views (the lab; close on the LEE and the shaft).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SHAFT_RGBA = (0.85, 0.75, 0.3, 1.0)
RING_RGBA = (0.6, 0.6, 0.65, 1.0)
WIRE_RGBA = (0.9, 0.2, 0.15, 1.0)


def draw_snare(scene, twin, snare, theta: float, layout=None) -> None:
    """Add the GF shaft, the LEE ring and its wires at ring angle ``theta`` to a rendered ``scene``."""
    from hil_lab_twin.animation import add_capsule, add_polyline
    from hil_snare.lab import SnareLabLayout, pose_sensor_in_lee
    from hil_snare.targets import GF_SHAFT_LENGTH_M, GF_SHAFT_RADIUS_M

    layout = layout or SnareLabLayout()
    pose_gf_sensor = twin.site_pose_in_world(f'{layout.gf_ns}_ft_site')
    pose_lee = twin.site_pose_in_world(f'{layout.lee_ns}_ft_site') * pose_sensor_in_lee().inverse()
    add_capsule(scene, pose_gf_sensor.translation, pose_gf_sensor.act(np.array([0.0, 0.0, GF_SHAFT_LENGTH_M])),
                GF_SHAFT_RADIUS_M, SHAFT_RGBA)
    x, r = snare.x_wire_m, snare.ring_radius_m
    angles = np.linspace(0.0, 2.0 * np.pi, 37)
    add_polyline(scene, [pose_lee.act(np.array([x, r * np.cos(a), r * np.sin(a)])) for a in angles], 0.01, RING_RGBA)
    add_capsule(scene, pose_lee.act(np.array([x, 0.0, 0.0])), twin.site_pose_in_world(f'{layout.lee_ns}_ft_site').translation,
                0.02, RING_RGBA)                                        # the LEE's housing, sensor to wire plane
    for curve in snare.curves(float(theta)):
        add_polyline(scene, [pose_lee.act(np.array([x, y, z])) for y, z in curve], 0.004, WIRE_RGBA)


def _at(times: np.ndarray, values: np.ndarray, t: float):
    """The latest of ``values`` stamped at or before ``t`` (the first one before any)."""
    k = int(np.searchsorted(times, t, side='right')) - 1
    return values[max(k, 0)]


def render_live_run(run, graph, out: Path, every_s: float = 0.1, width: int = 480, height: int = 352) -> tuple[list[Path], dict]:
    """Pictures of a live run (:class:`hil_snare.live.LiveRun` with its recorded joint states) in the twin of
    ``graph`` (:func:`hil_snare.graph.snare_graph`): an animation per view and stills at the start, the
    first wire contact and the end. Returns the files and the frames (``frames[view]``, ``times``)."""
    from hil_lab_twin.animation import TwinCamera, View, write_animation, write_still
    from hil_lab_twin.scene import config_from_yaml
    from hil_lab_twin.twin import LabTwin
    from hil_snare.lab import SnareLabLayout
    from hil_snare.runner import lee_snare
    from hil_snare.scenario import load_snare_scenario

    layout = SnareLabLayout()
    params = graph.node('/lab_twin').parameters
    twin = LabTwin(config_from_yaml(params['twin_config_yaml']))
    snare = lee_snare(load_snare_scenario(params['snare_scenario']).config)
    camera = TwinCamera(twin, width, height)
    frames, times = {}, []
    try:
        lee = twin.site_pose_in_world(f'{layout.lee_ns}_ft_site').translation
        gf = twin.site_pose_in_world(f'{layout.gf_ns}_ft_site').translation
        views = [View('lab', lookat=tuple(0.5 * (lee + gf)), distance=4.5, azimuth=120.0, elevation=-20.0),
                 View('lee', lookat=tuple(0.5 * (lee + gf)), distance=1.0, azimuth=150.0, elevation=-20.0)]
        for t in np.arange(float(run.t_sim[0]), float(run.t_sim[-1]) + 1e-9, every_s):
            for ns in (layout.lee_ns, layout.gf_ns):
                stamps, positions = run.joint_states[ns]
                twin.show_joints(ns, _at(stamps, positions, t))
            theta = float(np.interp(t, run.t_sim, run.theta))
            for view in views:
                frames.setdefault(view.name, []).append(
                    camera.render(view, decorate=lambda scene: draw_snare(scene, twin, snare, theta, layout)))
            times.append(float(t))
    finally:
        camera.close()
        twin.close()
    files = [write_animation(out / f'snare_live_{name}', shots, fps=10.0) for name, shots in frames.items()]
    t = np.asarray(times)
    touching = np.flatnonzero(np.max(run.wire_force_n, axis=1) > 0.0) if len(run.wire_force_n) else []
    marks = {'start': t[0], 'end': t[-1]}
    if len(touching):
        marks['first_contact'] = float(run.t_sim[touching[0]])
    for label, when in marks.items():
        k = int(np.argmin(np.abs(t - when)))
        files += [write_still(out / f'snare_live_{label}_{name}.png', shots[k]) for name, shots in frames.items()]
    return files, {'frames': frames, 'times': t}
