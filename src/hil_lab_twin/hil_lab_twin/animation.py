"""Pictures and animations of the MuJoCo lab twin (offscreen, EGL; no rclpy).

* :class:`View` -- a free camera (look-at point, distance, azimuth, elevation) chosen per
  shot, e.g. the whole facility, or close on the gripper and the ring during the grasp;
* :class:`FrameGrabber` -- a runner's ``progress(t, ...)`` callback that renders the twin's
  current state every ``every_s`` of simulated time, for each view;
* :func:`add_capsule`, :func:`add_polyline`, :func:`add_arrow` -- geometry drawn into a frame that
  the model does not have (wires computed outside MuJoCo, force arrows at the sensors);
* :func:`write_animation` -- MP4 (H.264 through the ffmpeg binary that the ``imageio-ffmpeg``
  wheel ships) or, where no encoder is available, an animated PNG; :func:`write_still` a PNG.

:func:`frame_difference` measures how much two frames differ, so a test can tell a render of
the robots from a blank frame and one phase from the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class View:
    """A free camera: looks at ``lookat`` (lab_world) from ``distance`` m, ``azimuth``/``elevation`` deg."""

    name: str
    lookat: tuple
    distance: float
    azimuth: float = 90.0
    elevation: float = -20.0


class TwinCamera:
    """Offscreen renders of a :class:`hil_lab_twin.twin.LabTwin` from :class:`View` s."""

    def __init__(self, twin, width: int = 640, height: int = 480):
        import mujoco

        self.twin = twin
        self.renderer = mujoco.Renderer(twin.model, height, width)
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE

    def render(self, view: View, decorate=None) -> np.ndarray:
        """The twin's present state from ``view``; ``decorate(scene)`` may add geometry that is not in the
        model (e.g. with :func:`add_capsule`: wires whose contact is computed outside MuJoCo)."""
        self.camera.lookat[:] = np.asarray(view.lookat, dtype=float)
        self.camera.distance = float(view.distance)
        self.camera.azimuth = float(view.azimuth)
        self.camera.elevation = float(view.elevation)
        self.renderer.update_scene(self.twin.data, camera=self.camera)
        if decorate is not None:
            decorate(self.renderer.scene)
        return self.renderer.render().copy()

    def close(self) -> None:
        self.renderer.close()


class FrameGrabber:
    """``progress(t, *_)``: renders every ``every_s`` of simulated time into ``frames[view.name]``."""

    def __init__(self, camera: TwinCamera, views, every_s: float, then=None, decorate=None):
        self.camera = camera
        self.decorate = decorate          # decorate(scene): geometry drawn into every frame (TwinCamera.render)
        self.views = list(views)
        self.every_s = float(every_s)
        self.next_t = 0.0
        self.frames = {v.name: [] for v in self.views}
        self.times: list[float] = []
        self.then = then

    def __call__(self, t: float, *rest) -> None:
        if t + 1e-9 >= self.next_t:
            for view in self.views:
                self.frames[view.name].append(self.camera.render(view, self.decorate))
            self.times.append(float(t))
            self.next_t += self.every_s
        if self.then is not None:
            self.then(t, *rest)


def add_capsule(scene, start, end, radius: float, rgba) -> bool:
    """Add a capsule from ``start`` to ``end`` (world) to a rendered scene; False when the scene is full."""
    import mujoco

    if scene.ngeom >= scene.maxgeom:
        return False
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3), np.eye(3).ravel(),
                        np.asarray(rgba, dtype=np.float32))
    mujoco.mjv_connector(geom, mujoco.mjtGeom.mjGEOM_CAPSULE, float(radius), np.asarray(start, dtype=float),
                         np.asarray(end, dtype=float))
    scene.ngeom += 1
    return True


def add_arrow(scene, start, vector, radius: float, rgba) -> bool:
    """Add an arrow from ``start`` along ``vector`` (world, metres) to a rendered scene (e.g. a force at its
    sensor, scaled to metres); nothing for a vector shorter than 1 mm."""
    import mujoco

    vector = np.asarray(vector, dtype=float)
    if np.linalg.norm(vector) < 1e-3 or scene.ngeom >= scene.maxgeom:
        return False
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, mujoco.mjtGeom.mjGEOM_ARROW, np.zeros(3), np.zeros(3), np.eye(3).ravel(),
                        np.asarray(rgba, dtype=np.float32))
    start = np.asarray(start, dtype=float)
    mujoco.mjv_connector(geom, mujoco.mjtGeom.mjGEOM_ARROW, float(radius), start, start + vector)
    scene.ngeom += 1
    return True


def add_polyline(scene, points, radius: float, rgba) -> None:
    """Consecutive points (world) joined by capsules."""
    points = np.asarray(points, dtype=float)
    for a, b in zip(points[:-1], points[1:]):
        if not add_capsule(scene, a, b, radius, rgba):
            return


def frame_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Fraction of pixels whose colour differs by more than 10 levels in any channel."""
    return float(np.mean(np.any(np.abs(a.astype(int) - b.astype(int)) > 10, axis=-1)))


def write_still(path, frame: np.ndarray) -> Path:
    from hil_lab_twin.png import write_png

    write_png(path, frame)
    return Path(path)


def write_animation(path_without_suffix, frames, fps: float = 10.0) -> Path:
    """``<path>.mp4`` with the ffmpeg binary of imageio-ffmpeg, else ``<path>.png`` (animated PNG)."""
    path = Path(path_without_suffix)
    frames = [np.ascontiguousarray(f) for f in frames]
    try:
        import imageio_ffmpeg

        h, w = frames[0].shape[:2]
        target = path.with_suffix('.mp4')
        writer = imageio_ffmpeg.write_frames(str(target), (w, h), fps=fps, codec='libx264', pix_fmt_out='yuv420p',
                                             macro_block_size=16, ffmpeg_log_level='error')
        writer.send(None)
        for f in frames:
            writer.send(f)
        writer.close()
        return target
    except (ImportError, RuntimeError, OSError):
        from hil_lab_twin.png import write_apng

        target = path.with_suffix('.png')
        write_apng(target, frames, fps=fps)
        return target
