"""rosbag2 recordings (MCAP storage) of rclpy messages, readable by ``ros2 bag``, ``rosbags`` and Foxglove.

A recording is a bag folder named as ROS names it: ``capture/`` holding ``capture_0.mcap``
and ``metadata.yaml`` (:mod:`hil_bringup.bag`, which also makes it crash-safe: small chunks,
a periodic flush, ``metadata.yaml`` written early, ``hil_bag_recover`` for a torn file).

* :class:`McapWriter` writes rclpy messages (serialised with rclpy, i.e. the CDR bytes an
  rmw puts on the wire, which is what rosbag2 stores) with explicit receive times.
* :class:`TopicRecorder` subscribes an rclpy node to a list of ``(topic, type)`` and writes
  every message as it arrives (a timer flushes an idle bag too); :meth:`TopicRecorder.close`
  finalises the bag and reports how many messages each topic got, so a run that ends on a
  fault still leaves a complete, readable bag.
"""

from __future__ import annotations

from pathlib import Path

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from hil_bringup.bag import BagError, BagWriter, bag_file

#: The recorder's queue per topic: 1 s of a 1 kHz topic, for a recorder held up on a busy machine
#: (what its publisher still holds is resent; what overflows here is lost, and counted by the stamps' gaps).
RECORD_DEPTH = 1000
LATCHED_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

__all__ = ['LATCHED_QOS', 'McapWriter', 'TopicRecorder', 'bag_file', 'qos_metadata', 'read_counts', 'type_name']


def type_name(msg_class) -> str:
    """``geometry_msgs/msg/WrenchStamped`` for an rclpy message class."""
    module = msg_class.__module__.split('.')            # geometry_msgs.msg._wrench_stamped
    return f'{module[0]}/msg/{msg_class.__name__}'


def qos_metadata(qos: QoSProfile) -> list[dict]:
    """``offered_qos_profiles`` of a bag (rosbag2 v9 form) for an rclpy profile, so a player re-offers it."""
    def duration(d) -> dict:
        ns = d.nanoseconds
        return {'sec': ns // 10**9, 'nsec': ns % 10**9}

    return [{'history': qos.history.name.lower(), 'depth': qos.depth,
             'reliability': qos.reliability.name.lower(), 'durability': qos.durability.name.lower(),
             'deadline': duration(qos.deadline), 'lifespan': duration(qos.lifespan),
             'liveliness': qos.liveliness.name.lower(),
             'liveliness_lease_duration': duration(qos.liveliness_lease_duration),
             'avoid_ros_namespace_conventions': qos.avoid_ros_namespace_conventions}]


_TYPESTORE = None


def _definition(msgtype: str) -> tuple[str, str]:
    """``(ros2msg definition with its dependencies, RIHS01 hash)`` of a ROS 2 Jazzy message type."""
    global _TYPESTORE
    from rosbags.typesys import Stores, get_typestore

    if _TYPESTORE is None:
        _TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
    try:
        msgdef, _ = _TYPESTORE.generate_msgdef(msgtype, ros_version=2)
        return msgdef, _TYPESTORE.hash_rihs01(msgtype)
    except Exception as exc:  # noqa: BLE001 - rosbags raises several kinds for an unknown type
        raise BagError(f'message type {msgtype} is not a ROS 2 Jazzy type known to rosbags: {exc}') from exc


class McapWriter:
    """A rosbag2 bag folder (MCAP storage) written from rclpy messages; see :class:`hil_bringup.bag.BagWriter`."""

    def __init__(self, path: Path, overwrite: bool = True, **options):
        self.bag = BagWriter(path, overwrite=overwrite, library='hil_bringup.recorder', **options)
        self.path = self.bag.path

    @property
    def file(self) -> Path:
        return self.bag.file

    @property
    def closed(self) -> bool:
        return self.bag.closed

    @property
    def counts(self) -> dict[str, int]:
        return self.bag.counts()

    def add_topic(self, topic: str, msg_class, qos: QoSProfile | None = None):
        """Register ``topic`` before its first message (``metadata.yaml`` lists it at once)."""
        existing = self.bag.topics.get(topic)
        if existing is not None:
            return existing
        name = type_name(msg_class)
        msgdef, rihs01 = _definition(name)
        return self.bag.add_topic(topic, name, msgdef, rihs01=rihs01, qos=qos_metadata(qos) if qos else ())

    def write(self, topic: str, msg, t_ns: int) -> None:
        from rclpy.serialization import serialize_message

        entry = self.bag.topics.get(topic) or self.add_topic(topic, type(msg))
        self.bag.write(entry, int(t_ns), serialize_message(msg))

    def write_serialized(self, topic: str, type_name_: str, data: bytes, t_ns: int) -> None:
        """Write a message already serialised to CDR (e.g. by a rosbags typestore) of type ``pkg/msg/Type``."""
        entry = self.bag.topics.get(topic)
        if entry is None:
            msgdef, rihs01 = _definition(type_name_)
            entry = self.bag.add_topic(topic, type_name_, msgdef, rihs01=rihs01)
        self.bag.write(entry, int(t_ns), data)

    def flush_if_due(self) -> None:
        self.bag.flush_if_due()

    def close(self) -> dict[str, int]:
        return self.bag.close()


def read_counts(path: Path) -> dict[str, int]:
    """Messages per topic in a bag, read back with rosbags (what ``ros2 bag info`` reports)."""
    from rosbags.rosbag2 import Reader

    with Reader(Path(path)) as reader:
        return {c.topic: c.msgcount for c in reader.connections}


class TopicRecorder:
    """Record ``topics`` (``[(name, msg_class), ...]``) seen by ``node`` into a bag folder ``path``."""

    def __init__(self, node, path: Path, topics, latched=(), flush_period_s: float = 0.5, **options):
        self.node = node
        self.writer = McapWriter(path, flush_period_s=flush_period_s, **options)
        self.received: dict[str, int] = {}
        self._subs = []
        self._names: dict[str, str] = {}
        for name, msg_class in topics:
            self.add(name, msg_class, LATCHED_QOS if name in latched else QoSProfile(depth=RECORD_DEPTH))
        self.writer.bag.flush()
        self._timer = node.create_timer(flush_period_s, self.writer.flush_if_due)

    def add(self, name: str, msg_class, qos: QoSProfile) -> None:
        """Subscribe to one more topic (``metadata.yaml`` lists it from the next flush)."""
        self.received[name] = 0
        self._names[name] = self.node.resolve_topic_name(name)
        entry = self.writer.add_topic(self._names[name], msg_class, qos)
        # raw: the CDR bytes as they arrived, written as they are (no deserialising and serialising again)
        self._subs.append(self.node.create_subscription(msg_class, name, lambda data, n=name, e=entry: self._on(n, e, data),
                                                        qos, raw=True))

    def _on(self, name: str, entry, data: bytes) -> None:
        if self.writer.closed:
            return
        self.received[name] += 1
        self.writer.bag.write(entry, self.node.get_clock().now().nanoseconds, data)

    def close(self) -> dict[str, int]:
        """Stop listening and finalise the bag; returns messages written per topic."""
        for sub in self._subs:
            self.node.destroy_subscription(sub)
        self._subs = []
        if self._timer is not None:
            self.node.destroy_timer(self._timer)
            self._timer = None
        return self.writer.close()
