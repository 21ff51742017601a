"""rosbag2 recordings in MCAP storage, readable by ``ros2 bag`` and Foxglove (via ``rosbags``).

* :class:`McapWriter` writes rclpy messages (serialised with rclpy, i.e. the CDR bytes an
  rmw puts on the wire, which is what rosbag2 stores) with explicit receive times.
* :class:`TopicRecorder` subscribes an rclpy node to a list of ``(topic, type)`` and writes
  every message as it arrives; :meth:`TopicRecorder.close` flushes and finalises the bag
  (metadata.yaml and the MCAP summary) and reports how many messages each topic got, so a
  run that ends on a fault still leaves a complete, readable bag.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy


LATCHED_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def type_name(msg_class) -> str:
    """``geometry_msgs/msg/WrenchStamped`` for an rclpy message class."""
    module = msg_class.__module__.split('.')            # geometry_msgs.msg._wrench_stamped
    return f'{module[0]}/msg/{msg_class.__name__}'


class McapWriter:
    """A rosbag2 bag (MCAP storage) written from rclpy messages."""

    def __init__(self, path: Path, overwrite: bool = True):
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        self.path = Path(path)
        if self.path.exists() and overwrite:
            shutil.rmtree(self.path)
        self.typestore = get_typestore(Stores.ROS2_JAZZY)
        self._writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        self._connections: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.closed = False

    def write(self, topic: str, msg, t_ns: int) -> None:
        from rclpy.serialization import serialize_message

        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, type_name(type(msg)), typestore=self.typestore)
            self._connections[topic] = conn
            self.counts[topic] = 0
        self._writer.write(conn, int(t_ns), serialize_message(msg))
        self.counts[topic] += 1

    def close(self) -> dict[str, int]:
        if not self.closed:
            self._writer.close()
            self.closed = True
        return dict(self.counts)


def read_counts(path: Path) -> dict[str, int]:
    """Messages per topic in a bag, read back with rosbags (what ``ros2 bag info`` reports)."""
    from rosbags.rosbag2 import Reader

    with Reader(Path(path)) as reader:
        return {c.topic: c.msgcount for c in reader.connections}


class TopicRecorder:
    """Record ``topics`` (``[(name, msg_class), ...]``) seen by ``node`` into an MCAP bag."""

    def __init__(self, node, path: Path, topics, latched=()):
        self.node = node
        self.writer = McapWriter(path)
        self.received: dict[str, int] = {}
        self._subs = []
        for name, msg_class in topics:
            qos = LATCHED_QOS if name in latched else 100
            self.received[name] = 0
            self._subs.append(node.create_subscription(msg_class, name, lambda m, n=name: self._on(n, m), qos))

    def _on(self, name: str, msg) -> None:
        if self.writer.closed:
            return
        self.received[name] += 1
        self.writer.write(self.node.resolve_topic_name(name), msg, self.node.get_clock().now().nanoseconds)

    def close(self) -> dict[str, int]:
        """Stop listening and finalise the bag; returns messages written per topic."""
        for sub in self._subs:
            self.node.destroy_subscription(sub)
        self._subs = []
        return self.writer.close()
