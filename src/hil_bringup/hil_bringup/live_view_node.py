"""``live_view_node``: the lab in 3-D while the graph runs, for RViz and for Foxglove.

Subscribes (relative names): ``client/joint_states``, ``servicer/joint_states``,
``servicer_arm/joint_states`` (sensor_msgs/JointState), ``client/ft/wrench`` and
``servicer/ft/wrench`` (geometry_msgs/WrenchStamped, sensor frame), ``obsw/phase``
(std_msgs/String), ``client/ft/fault``, ``servicer/ft/fault``, ``client/table/status``,
``servicer/table/status``, ``client/hot_path/status``, ``servicer/hot_path/status`` (diagnostic_msgs/DiagnosticStatus).

The joints and wrenches (1 kHz streams in the graphs) are read when the scene is made, newest value only
(:meth:`hil_common.polled.PolledSubscription.take_latest`): the node does not wake for each of their
messages. In the Envisat twin graph its callbacks per message took about 30 s of CPU over an 18 s mission.

Publishes at ``rate_hz``, from the one scene of :class:`hil_bringup.lab_view.LabView`:

* ``live_view/markers`` (visualization_msgs/MarkerArray, frame ``lab_world``) for RViz;
* ``live_view/frames/<frame>`` (geometry_msgs/PoseStamped in ``lab_world``): the TF-equivalent
  pose stream (tf2 is not a dependency of ours);
* with ``foxglove_port`` > 0, the same scene on a Foxglove WebSocket server
  (``ws://<foxglove_host>:<foxglove_port>``, 127.0.0.1 by default) as ``foxglove.SceneUpdate``
  on the topic ``/lab_scene``: open it in Foxglove (Open connection -> Foxglove WebSocket) with no
  ROS install.
"""

from __future__ import annotations

import sys

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Point, PoseStamped, WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from visualization_msgs.msg import Marker, MarkerArray

from hil_common.conversions import pose_to_msg, wrench_from_msg
from hil_common.params import Param, declare_parameters
from hil_common.polled import PolledSubscription
from hil_common.ros_main import run_node

PARAMS = [
    Param('facility', 'envisat_lab', 'Lab calibration: facility name or YAML path (hil_bringup.facility)'),
    Param('scenario', 'envisat_capture', 'Mission scenario name or YAML path'),
    Param('rate_hz', 4.0, 'Scene update rate [Hz]', min=0.1, max=100.0),
    Param('foxglove_port', 8765, 'Foxglove WebSocket server port (0: no server)', min=0, max=65535),
    Param('foxglove_host', '127.0.0.1', 'Address the Foxglove server listens on (a lab opts into its network)'),
    Param('frame_id', 'lab_world', 'Frame of the markers and poses'),
]
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATUS_TOPICS = ('client/ft/fault', 'servicer/ft/fault', 'client/table/status', 'servicer/table/status',
                 'client/hot_path/status', 'servicer/hot_path/status', 'servicer/admittance/status',
                 'client/admittance/status')


def _rgba(color):
    from std_msgs.msg import ColorRGBA

    return ColorRGBA(r=float(color[0]), g=float(color[1]), b=float(color[2]), a=float(color[3]))


def markers_from_scene(scene, frame_id: str, stamp) -> MarkerArray:
    """The scene as RViz markers (one marker per shape; frames as three axis arrows)."""
    out = MarkerArray()
    for k, shape in enumerate(scene.shapes):
        base = dict(ns='lab', id=k, action=Marker.ADD)
        if shape.kind == 'axes':
            for axis in range(3):
                m = Marker(**{**base, 'id': 1000 + 3 * k + axis}, type=Marker.ARROW)
                tail = shape.pose.translation
                head = tail + shape.size[0] * shape.pose.rotation[:, axis]
                m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in (tail, head)]
                m.scale.x, m.scale.y, m.scale.z = 0.01, 0.02, 0.03
                m.color = _rgba([(1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 1, 1)][axis])
                m.header.frame_id, m.header.stamp = frame_id, stamp
                m.pose.orientation.w = 1.0
                out.markers.append(m)
            continue
        m = Marker(**base)
        m.header.frame_id, m.header.stamp = frame_id, stamp
        m.color = _rgba(shape.color)
        m.pose.orientation.w = 1.0
        if shape.kind == 'line':
            m.type = Marker.LINE_STRIP
            m.scale.x = float(shape.size[0])
            m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in shape.points]
        elif shape.kind == 'arrow':
            m.type = Marker.ARROW
            m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in shape.points]
            m.scale.x, m.scale.y, m.scale.z = float(shape.size[0]), 2 * float(shape.size[0]), 0.05
        elif shape.kind == 'box':
            m.type = Marker.CUBE
            pose_to_msg(shape.pose, m.pose)
            m.scale.x, m.scale.y, m.scale.z = (float(v) for v in shape.size)
        elif shape.kind == 'text':
            m.type = Marker.TEXT_VIEW_FACING
            pose_to_msg(shape.pose, m.pose)
            m.scale.z = float(shape.size[0])
            m.text = shape.text
        out.markers.append(m)
    return out


def foxglove_scene(scene, frame_id: str, t_ns: int):
    """The scene as a ``foxglove.messages.SceneUpdate`` (one entity per shape)."""
    from foxglove import messages as fm

    def pose(g):
        q = __import__('pinocchio').Quaternion(g.rotation)
        return fm.Pose(position=fm.Vector3(x=float(g.translation[0]), y=float(g.translation[1]), z=float(g.translation[2])),
                       orientation=fm.Quaternion(x=float(q.x), y=float(q.y), z=float(q.z), w=float(q.w)))

    identity = fm.Pose(position=fm.Vector3(x=0.0, y=0.0, z=0.0), orientation=fm.Quaternion(x=0.0, y=0.0, z=0.0, w=1.0))

    def color(c):
        return fm.Color(r=float(c[0]), g=float(c[1]), b=float(c[2]), a=float(c[3]))

    def points(ps):
        return [fm.Point3(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in ps]

    stamp = fm.Timestamp(sec=t_ns // 1_000_000_000, nsec=t_ns % 1_000_000_000)
    entities = []
    for shape in scene.shapes:
        kw = {}
        if shape.kind == 'line':
            kw['lines'] = [fm.LinePrimitive(type=fm.LinePrimitiveLineType.LineStrip, pose=identity,
                                            thickness=float(shape.size[0]), scale_invariant=False,
                                            points=points(shape.points), color=color(shape.color))]
        elif shape.kind == 'arrow':
            tail, head = shape.points
            points_ab = np.array([tail, head])
            kw['lines'] = [fm.LinePrimitive(type=fm.LinePrimitiveLineType.LineStrip, pose=identity,
                                            thickness=float(shape.size[0]), scale_invariant=False,
                                            points=points(points_ab), color=color(shape.color))]
            kw['texts'] = [fm.TextPrimitive(pose=pose(__import__('pinocchio').SE3(np.eye(3), head)), billboard=True,
                                            font_size=14.0, scale_invariant=True, color=color(shape.color),
                                            text=shape.text)]
        elif shape.kind == 'box':
            kw['cubes'] = [fm.CubePrimitive(pose=pose(shape.pose), size=fm.Vector3(
                x=float(shape.size[0]), y=float(shape.size[1]), z=float(shape.size[2])), color=color(shape.color))]
        elif shape.kind == 'axes':
            kw['lines'] = [fm.LinePrimitive(type=fm.LinePrimitiveLineType.LineList, pose=pose(shape.pose), thickness=0.01,
                                            scale_invariant=False, points=points(
                                                [[0, 0, 0], [shape.size[0], 0, 0], [0, 0, 0], [0, shape.size[0], 0],
                                                 [0, 0, 0], [0, 0, shape.size[0]]]),
                                            colors=[color(c) for c in ((1, 0, 0, 1),) * 2 + ((0, 1, 0, 1),) * 2
                                                    + ((0, 0, 1, 1),) * 2])]
            kw['texts'] = [fm.TextPrimitive(pose=pose(shape.pose), billboard=True, font_size=12.0, scale_invariant=True,
                                            color=color((1, 1, 1, 1)), text=shape.text)]
        elif shape.kind == 'text':
            kw['texts'] = [fm.TextPrimitive(pose=pose(shape.pose), billboard=True, font_size=18.0, scale_invariant=True,
                                            color=color(shape.color), text=shape.text)]
        entities.append(fm.SceneEntity(timestamp=stamp, frame_id=frame_id, id=shape.id, frame_locked=False, **kw))
    return fm.SceneUpdate(entities=entities)


class LiveViewNode(Node):
    def __init__(self):
        super().__init__('live_view')
        p = declare_parameters(self, PARAMS)
        from hil_bringup.facility import calibrate, load_facility
        from hil_bringup.lab_view import LabView
        from hil_bringup.scenario import load_scenario

        self.view = LabView(calibrate(load_facility(p['facility']), load_scenario(p['scenario']), check=False))
        self.frame_id = p['frame_id']
        self.names = {'client': list(self.view.kin['client'].spec.joint_names),
                      'servicer': list(self.view.kin['servicer'].spec.joint_names),
                      'arm': list(self.view.arm.joint_names)}
        # The 1 kHz streams are read at the scene's rate, newest value only: no wake-up per message (polled)
        self.joints_in = {who: PolledSubscription(self, JointState, topic, 1, raw=False)
                          for who, topic in (('client', 'client/joint_states'), ('servicer', 'servicer/joint_states'),
                                             ('arm', 'servicer_arm/joint_states'))}
        self.wrench_in = {who: PolledSubscription(self, WrenchStamped, f'{who}/ft/wrench', 1, raw=False)
                          for who in ('client', 'servicer')}
        self.create_subscription(String, 'obsw/phase', lambda m: setattr(self.view, 'phase', m.data), LATCHED)
        for topic in STATUS_TOPICS:
            self.create_subscription(DiagnosticStatus, topic, lambda m, t=topic: self.on_status(t, m),
                                     LATCHED if topic.endswith('fault') else 10)
        self.pub_markers = self.create_publisher(MarkerArray, 'live_view/markers', 1)
        self.pub_frames = {}
        self.server = self.channel = None
        if p['foxglove_port'] > 0:
            import foxglove
            from foxglove.channels import SceneUpdateChannel

            self.server = foxglove.start_server(name='hil live view', host=p['foxglove_host'], port=p['foxglove_port'])
            self.channel = SceneUpdateChannel('/lab_scene')
            self.get_logger().info(f'Foxglove WebSocket server on ws://{p["foxglove_host"]}:{self.server.port} '
                                   f'(topic /lab_scene)')
        self.create_timer(1.0 / p['rate_hz'], self.publish)

    def on_joints(self, who: str, msg: JointState) -> None:
        names = self.names[who]
        if list(msg.name) == names or not msg.name:
            positions = msg.position
        elif set(names) <= set(msg.name):
            index = {n: i for i, n in enumerate(msg.name)}
            positions = [msg.position[index[n]] for n in names]
        else:
            return
        self.view.joints(who, positions)

    def on_status(self, topic: str, msg: DiagnosticStatus) -> None:
        level = int.from_bytes(msg.level, 'little') if isinstance(msg.level, (bytes, bytearray)) else int(msg.level)
        if level >= 2:                                     # DiagnosticStatus.ERROR
            self.view.faults[topic] = msg.message
        else:
            self.view.faults.pop(topic, None)

    def take_inputs(self) -> None:
        """The newest joints and wrenches since the last scene."""
        for who, subscription in self.joints_in.items():
            msg = subscription.take_latest()
            if msg is not None:
                self.on_joints(who, msg)
        for who, subscription in self.wrench_in.items():
            msg = subscription.take_latest()
            if msg is not None:
                self.view.wrench_in_sensor(who, wrench_from_msg(msg.wrench))

    def publish(self) -> None:
        self.take_inputs()
        scene = self.view.scene()
        now = self.get_clock().now()
        stamp = now.to_msg()
        self.pub_markers.publish(markers_from_scene(scene, self.frame_id, stamp))
        for name, pose in scene.frames.items():
            pub = self.pub_frames.get(name)
            if pub is None:
                pub = self.pub_frames[name] = self.create_publisher(PoseStamped, f'live_view/frames/{name}', 1)
            msg = PoseStamped()
            msg.header.frame_id, msg.header.stamp = self.frame_id, stamp
            pose_to_msg(pose, msg.pose)
            pub.publish(msg)
        if self.channel is not None:
            self.channel.log(foxglove_scene(scene, self.frame_id, now.nanoseconds), log_time=now.nanoseconds)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def destroy_node(self):
        for subscription in (*self.joints_in.values(), *self.wrench_in.values()):
            subscription.destroy()
        return super().destroy_node()


def main(args=None) -> int:
    return run_node(LiveViewNode, 'live_view', args)


if __name__ == '__main__':
    sys.exit(main())
