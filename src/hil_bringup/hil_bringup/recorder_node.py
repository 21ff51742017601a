"""``recorder_node``: record topics to a rosbag2 bag (MCAP storage) where ``ros2 bag`` is absent.

The launch files' ``record:=true`` runs ``ros2 bag record``; on a machine without it (this
venv, a minimal install) they start this node instead, with the same topics. It writes the
same bag as ``ros2 bag record -s mcap -o <bag_path> <topics>``: ``<bag_path>/`` holding
``<name>_0.mcap`` and ``metadata.yaml``, crash-safe (:mod:`hil_bringup.bag`: a periodic
flush, ``metadata.yaml`` written early; ``hil_bag_recover`` rebuilds a bag cut by a crash).

Like ``ros2 bag record``, it finds each topic's type in the graph (every
``discovery_period_s`` until all are found) and subscribes with the publishers' QoS:
transient-local when every publisher offers it (latched topics), best-effort when one
publisher is best-effort. It subscribes to a topic only once it sees a publisher of it: a topic
known only through another node's subscription has no QoS to copy, and a volatile guess would
miss a latched message that is already out (it did on a loaded machine, discovery sending the
other recorder's subscription first). On SIGINT/SIGTERM it finalises the bag and logs the counts.

Parameters: ``bag_path`` (required), ``topics`` (relative names resolve in the node's
namespace) or ``all_topics`` (every topic that appears, as ``ros2 bag record --all``),
``overwrite``, ``flush_period_s``, ``chunk_size_kib``, ``fsync``, ``compression``,
``discovery_period_s``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from hil_common.params import REQUIRED, Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node

PARAMS = [
    Param('bag_path', REQUIRED, 'Bag folder to create (as ros2 bag record -o): <bag_path>/<name>_0.mcap and '
          'metadata.yaml', type='str', check=lambda v: None if v.strip() else 'must not be empty'),
    Param('topics', [], 'Topics to record (relative names resolve in the node namespace); empty with all_topics',
          type='str[]', check=lambda v: None if all(t.strip() for t in v) else 'topic names must not be empty'),
    Param('all_topics', False, 'Record every topic that appears in the graph (as ros2 bag record --all)'),
    Param('overwrite', False, 'Replace an existing bag folder (false: refuse to start, as ros2 bag record does)'),
    Param('flush_period_s', 0.5, 'Write the open chunk and metadata.yaml at least this often [s] (what a crash '
          'can lose)', min=0.01, max=60.0),
    Param('chunk_size_kib', 256, 'MCAP chunk size [KiB]', min=4, max=65536),
    Param('fsync', True, 'fsync the bag at every flush (survives a machine crash, not only a recorder crash)'),
    Param('compression', '', "Chunk compression ('' none, 'zstd', 'lz4')", choices=('', 'zstd', 'lz4')),
    Param('discovery_period_s', 0.5, 'How often to look for the types of topics not yet subscribed [s]',
          min=0.05, max=10.0),
]


def message_class(type_name: str):
    """The rclpy class of ``package/msg/Type``."""
    package, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def subscription_qos(publishers) -> QoSProfile:
    """The QoS ``ros2 bag record`` would pick for these publishers' endpoint infos."""
    profiles = [info.qos_profile for info in publishers]
    latched = bool(profiles) and all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in profiles)
    best_effort = any(p.reliability == ReliabilityPolicy.BEST_EFFORT for p in profiles)
    return QoSProfile(depth=100,
                      reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


class RecorderNode(Node):
    def __init__(self):
        from hil_bringup.bag import BagError
        from hil_bringup.recorder import TopicRecorder

        super().__init__('recorder')
        p = declare_parameters(self, PARAMS)
        try:
            self.recorder = TopicRecorder(self, Path(p.bag_path), [], flush_period_s=p.flush_period_s,
                                          overwrite=p.overwrite, chunk_size=p.chunk_size_kib * 1024,
                                          fsync=p.fsync, compression=p.compression)
        except (BagError, OSError) as exc:
            raise ParameterError(f"parameter 'bag_path': {exc}") from exc
        if not p.topics and not p.all_topics:
            raise ParameterError("parameter 'topics': give the topics to record, or all_topics:=true")
        self.all_topics = p.all_topics
        self.pending = {name: self.resolve_topic_name(name) for name in p.topics}
        what = 'every topic' if p.all_topics else f'{len(self.pending)} topics'
        self.get_logger().info(f'recording {what} to {self.recorder.writer.path} '
                               '(hil_bringup recorder_node, rosbag2 MCAP layout)')
        self.closed = False
        self._discovery = self.create_timer(p.discovery_period_s, self.discover)
        self.discover()

    def discover(self) -> None:
        if not self.pending and not self.all_topics:
            return
        types = dict(self.get_topic_names_and_types())
        if self.all_topics:
            recorded = set(self.recorder.writer.bag.topics)
            for resolved in types:
                if resolved not in recorded and resolved not in self.pending.values():
                    self.pending[resolved] = resolved
        for name, resolved in list(self.pending.items()):
            if not types.get(resolved):
                continue
            type_name = types[resolved][0]
            try:
                msg_class = message_class(type_name)
            except (ImportError, AttributeError, ValueError):
                self.get_logger().error(f'{resolved}: type {type_name} is not installed here; not recorded')
                del self.pending[name]
                continue
            publishers = self.get_publishers_info_by_topic(resolved)
            if not publishers:        # no QoS to copy yet (seen through a subscription): look again next time
                continue
            self.recorder.add(name, msg_class, subscription_qos(publishers))
            del self.pending[name]
            self.get_logger().info(f'recording {resolved} ({type_name})')
        if not self.pending and not self.all_topics and self._discovery is not None:
            self.destroy_timer(self._discovery)
            self._discovery = None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        counts = self.recorder.close()
        missing = f'; never seen: {sorted(self.pending.values())}' if self.pending else ''
        self.get_logger().info(f'bag {self.recorder.writer.path} closed: {sum(counts.values())} messages '
                               f'on {len(counts)} topics {counts}{missing}')


def main(args=None) -> int:
    return run_node(RecorderNode, 'recorder', args)


if __name__ == '__main__':
    sys.exit(main())
