"""The lab in 3-D from what the graph measures (no rclpy): robots, mock-ups, frames, wrenches, phase.

:class:`LabView` turns the robots' joint states and the F/T wrenches into a :class:`Scene` of
simple shapes in ``lab_world`` (from the lab calibration, :mod:`hil_bringup.facility`):

* each table robot as the polyline of its joint origins (forward kinematics of the motion
  table's own robot model, :class:`hil_motion_table.kinematics.SerialKinematics`), on its
  calibrated base;
* the client mock-up (box and launch-adapter ring) on the client flange, the servicer base
  (a box at the base CoM) and the light-weight arm (forward kinematics of the servicer URDF,
  Pinocchio) on the servicer flange;
* frames: the nominal frame, the client CoM, the grasp frame, the servicer base CoM, the tool;
* each F/T wrench as a force arrow at its sensor (0.01 m per N) in the sensor's frame;
* the OBSW phase and the latched faults as text.

The same scene goes to RViz as ``visualization_msgs/MarkerArray`` and to Foxglove as a
``SceneUpdate`` (:mod:`hil_bringup.live_view_node`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

FORCE_SCALE_M_PER_N = 0.01
COLORS = {'client': (0.2, 0.45, 0.9, 1.0), 'servicer': (0.95, 0.55, 0.1, 1.0), 'arm': (0.9, 0.9, 0.9, 1.0),
          'mockup': (0.75, 0.75, 0.8, 0.9), 'ring': (0.85, 0.7, 0.2, 1.0), 'force': (0.9, 0.1, 0.1, 1.0),
          'text': (1.0, 1.0, 1.0, 1.0), 'fault': (1.0, 0.2, 0.2, 1.0)}


@dataclass
class Shape:
    """One primitive in ``lab_world``: ``kind`` is ``line`` (``points``), ``box`` (``size``), ``arrow``
    (``points`` = [tail, head]), ``axes`` (a frame, ``size[0]`` long) or ``text``."""

    id: str
    kind: str
    pose: pin.SE3 = field(default_factory=pin.SE3.Identity)
    points: np.ndarray | None = None
    size: tuple = (0.1, 0.1, 0.1)
    color: tuple = (1.0, 1.0, 1.0, 1.0)
    text: str = ''


@dataclass
class Scene:
    shapes: list
    frames: dict          # name -> pose in lab_world

    def shape(self, id_: str) -> Shape:
        return next(s for s in self.shapes if s.id == id_)


class LabView:
    """Builds the :class:`Scene` of the Envisat lab from the calibration and the latest measurements."""

    def __init__(self, calibration):
        from hil_dynamics.servicer import ServicerModel
        from hil_motion_table.kinematics_helpers import make_kinematics

        self.cal = calibration
        f = calibration.facility
        self.kin = {ns: make_kinematics(f.robot_models[ns]) for ns in ('client', 'servicer')}
        s = calibration.scenario.servicer
        self.arm = ServicerModel(s.urdf, s.ee_frame)
        self.pose_tool_in_flange = s.pose_tool_in_flange
        self.q = {ns: np.array(calibration.q_table_0[ns], dtype=float) for ns in ('client', 'servicer')}
        self.q['arm'] = np.array(s.q_arm_0, dtype=float)
        self.wrench = {'client': np.zeros(6), 'servicer': np.zeros(6)}
        self.phase = ''
        self.faults: dict[str, str] = {}

    # -- inputs ------------------------------------------------------------------------------------
    def joints(self, who: str, positions) -> None:
        """``who``: ``client``, ``servicer`` (the tables) or ``arm``, positions in model order."""
        q = np.asarray(positions, dtype=float)
        if q.shape == self.q[who].shape and np.all(np.isfinite(q)):
            self.q[who] = q

    def wrench_in_sensor(self, who: str, wrench) -> None:
        w = np.asarray(wrench, dtype=float)
        if w.shape == (6,) and np.all(np.isfinite(w)):
            self.wrench[who] = w

    # -- the scene ---------------------------------------------------------------------------------
    def _chain(self, ns: str) -> tuple[list[np.ndarray], pin.SE3]:
        kin = self.kin[ns]
        base = self.cal.facility.pose_base_in_lab[ns]
        pin.forwardKinematics(kin.model, kin.data, self.q[ns])
        pin.updateFramePlacements(kin.model, kin.data)
        points = [base.translation.copy()] + [(base * kin.data.oMi[j]).translation.copy()
                                               for j in range(1, kin.model.njoints)]
        flange = base * pin.SE3(kin.data.oMf[kin.frame_id])
        points.append(flange.translation.copy())
        return points, flange

    def scene(self) -> Scene:
        cal, f = self.cal, self.cal.facility
        shapes, frames = [], {'lab_world': pin.SE3.Identity(), 'nominal': f.pose_nominal_in_lab}
        flanges = {}
        for ns in ('client', 'servicer'):
            points, flanges[ns] = self._chain(ns)
            shapes.append(Shape(f'{ns}_robot', 'line', points=np.array(points), size=(0.08,), color=COLORS[ns]))
        # client mock-up: F/T sensor frame, box, ring around the grasp frame
        client_sensor = flanges['client'] * f.pose_client_sensor_in_flange
        half = np.asarray(f.ring.get('box_half_m', (0.15, 0.15, 0.08)), dtype=float)
        shapes.append(Shape('client_mockup', 'box', pose=client_sensor * pin.SE3(np.eye(3), np.array([0, 0, half[2]])),
                            size=tuple(2 * half), color=COLORS['mockup']))
        grasp = client_sensor * f.pose_grasp_in_sensor
        radius = float(f.ring.get('ring_radius_m', 0.16))
        # the ring: a circle about the ring axis (grasp x) through the grasp point, centred off it along -y
        centre = grasp * pin.SE3(np.eye(3), np.array([0.0, -radius, 0.0]))
        angles = np.linspace(0.0, 2 * np.pi, 49)
        ring = np.array([(centre * pin.SE3(np.eye(3), radius * np.array([0.0, np.cos(a), np.sin(a)]))).translation
                         for a in angles])
        shapes.append(Shape('client_ring', 'line', points=ring, size=(0.02,), color=COLORS['ring']))
        frames['client_com'] = flanges['client'] * cal.pose_body_in_flange['client']
        frames['client_grasp'] = grasp
        frames['client_ft_sensor'] = client_sensor
        # servicer base CoM, arm (its base bolted on the servicer sensor)
        base_com = flanges['servicer'] * cal.pose_body_in_flange['servicer']
        frames['servicer_base_com'] = base_com
        shapes.append(Shape('servicer_base', 'box', pose=base_com, size=(0.3, 0.3, 0.3), color=COLORS['mockup']))
        model, data = self.arm.model, self.arm.data
        cfg = self.arm.configuration(pin.SE3.Identity(), self.q['arm'])
        pin.forwardKinematics(model, data, cfg)
        pin.updateFramePlacements(model, data)
        arm_points = [(base_com * data.oMi[j]).translation.copy() for j in range(2, model.njoints)]
        tool = base_com * pin.SE3(data.oMf[self.arm.ee_frame_id]) * self.pose_tool_in_flange
        arm_points.append(tool.translation.copy())
        shapes.append(Shape('servicer_arm', 'line', points=np.array(arm_points), size=(0.05,), color=COLORS['arm']))
        frames['tool'] = tool
        wrist_sensor = base_com * pin.SE3(data.oMf[self.arm.ee_frame_id])
        frames['wrist_ft_sensor'] = wrist_sensor
        # wrenches: force arrows at the sensors
        for who, sensor in (('client', client_sensor), ('servicer', wrist_sensor)):
            force_lab = sensor.rotation @ self.wrench[who][:3]
            shapes.append(Shape(f'{who}_force', 'arrow', points=np.array(
                [sensor.translation, sensor.translation + FORCE_SCALE_M_PER_N * force_lab]), size=(0.02,),
                color=COLORS['force'], text=f'{np.linalg.norm(self.wrench[who][:3]):.1f} N'))
        for name, pose in frames.items():
            shapes.append(Shape(f'frame_{name}', 'axes', pose=pose, size=(0.15,), text=name))
        status = f'phase: {self.phase or "-"}' + ''.join(f'\nFAULT {k}: {v}' for k, v in self.faults.items())
        shapes.append(Shape('status', 'text', pose=pin.SE3(np.eye(3), f.pose_nominal_in_lab.translation + [0, 0, 1.2]),
                            size=(0.12,), color=COLORS['fault'] if self.faults else COLORS['text'], text=status))
        return Scene(shapes, frames)
