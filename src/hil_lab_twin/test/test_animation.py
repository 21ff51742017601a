"""Offscreen pictures and animations of the twin show the robots, and show them move."""

import numpy as np

from hil_lab_twin.animation import FrameGrabber, TwinCamera, View, frame_difference, write_animation, write_still
from hil_lab_twin.scene import facility_config
from hil_lab_twin.twin import LabTwin


def test_renders_show_the_robots_and_their_motion_and_animations_are_written(tmp_path):
    twin = LabTwin(facility_config(with_servicer=True))
    camera = TwinCamera(twin, 320, 240)
    wide = View('facility', lookat=(0.8, 0.0, 0.8), distance=5.0, azimuth=120.0, elevation=-20.0)
    empty = View('sky', lookat=(0.0, 0.0, 40.0), distance=1.0, azimuth=0.0, elevation=80.0)   # looks at nothing
    q0 = twin.joint_state('client').positions.copy()
    grabber = FrameGrabber(camera, [wide], every_s=0.1)
    for k in range(4):
        twin.command_positions('client', q0 + (0.25 * (k + 1)) * np.array([1.0, -0.5, 0.5, 0.0, 0.0, 0.0]))
        twin.advance_to(twin.time + 0.1)
        grabber(twin.time)
    frames = grabber.frames['facility']
    assert len(frames) == 4 and frames[0].shape == (240, 320, 3)
    blank = camera.render(empty)
    # the robots fill a good part of the picture, and the commanded motion changes it
    assert frame_difference(frames[0], blank) > 0.1
    assert frame_difference(frames[0], frames[-1]) > 0.005
    assert frame_difference(frames[-1], frames[-1].copy()) == 0.0
    still = write_still(tmp_path / 'facility.png', frames[-1])
    assert still.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    movie = write_animation(tmp_path / 'facility', frames, fps=10.0)
    assert movie.suffix == '.mp4' and movie.stat().st_size > 1000
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(movie))
    meta = next(reader)
    assert meta['size'] == (320, 240) and sum(1 for _ in reader) == 4
    camera.close()
    twin.close()


def test_drawn_geometry_and_force_arrows_show_in_the_frame():
    """:func:`add_capsule` and :func:`add_arrow` draw what the model does not have (wires, force arrows);
    an arrow shorter than 1 mm is not drawn."""
    from hil_lab_twin.animation import add_arrow, add_capsule

    twin = LabTwin(facility_config())
    camera = TwinCamera(twin, 320, 240)
    view = View('client', lookat=(2.6, 0.0, 1.2), distance=2.5, azimuth=120.0, elevation=-15.0)
    plain = camera.render(view)
    drawn = []

    def decorate(scene):
        drawn.append(add_arrow(scene, (2.6, 0.0, 1.2), (0.0, 0.0, 0.5), 0.03, (1.0, 0.2, 0.2, 1.0)))
        drawn.append(add_capsule(scene, (2.3, -0.3, 1.0), (2.9, 0.3, 1.0), 0.02, (0.2, 0.9, 0.2, 1.0)))
        drawn.append(add_arrow(scene, (2.6, 0.0, 1.2), (0.0, 0.0, 5e-4), 0.03, (1.0, 0.2, 0.2, 1.0)))
    decorated = camera.render(view, decorate)
    assert drawn == [True, True, False]
    assert frame_difference(plain, decorated) > 0.005
    assert frame_difference(plain, camera.render(view)) == 0.0       # the decoration is per frame
    camera.close()
    twin.close()
