"""Subscriptions that no executor waits on: the node takes their messages when it needs them.

Each message that arrives on an executor's subscription costs its process a wake-up: Fast DDS's
receive thread hands it to the executor's thread, which runs its callback (docs/performance.md,
"Tenth session"). A node that needs an input only at the moment another input arrives (the fused
servicer hot path reads the arm's and the table's joints at each wrist sample) can take it then
instead. Its messages wait in the subscription's history (KEEP_LAST ``depth``) and
:meth:`PolledSubscription.take_all` returns them in the order they arrived. One wake-up per wrist
sample instead of three. A node that needs only the newest value of a fast stream, at a lower rate of its
own (the live view's scene at 4 Hz, the OBSW at its period), takes it with :meth:`PolledSubscription.take_latest`.

The subscription belongs to the node (its rcl handle is created on the node's, so the node's
remappings and namespace apply, and graph introspection lists it under the node), but it is not
in the node's subscription list, so no executor waits on it or takes from it.
"""

from __future__ import annotations

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.type_support import check_is_valid_msg_type

from hil_common.errors import ConfigError


class PolledSubscription:
    """A subscription taken from by hand (:meth:`take_all`), never by an executor.

    ``raw=True`` returns each message as its serialized CDR ``bytes`` (:mod:`hil_common.cdr`),
    otherwise as a ``msg_type`` instance. ``best_effort``: a best-effort reader (reliable by default), which takes
    from reliable and best-effort writers alike (``/clock``: rclpy's time source reads it so).
    """

    def __init__(self, node, msg_type, topic: str, depth: int = 10, raw: bool = True, best_effort: bool = False):
        if depth < 1:
            raise ConfigError(f"polled subscription to '{topic}': depth must be at least 1 (got {depth})")
        check_is_valid_msg_type(msg_type)     # imports the type support, as Node.create_subscription does
        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT if best_effort
                         else ReliabilityPolicy.RELIABLE)
        with node.handle:
            self._impl = _rclpy.Subscription(node.handle, msg_type, topic, qos.get_c_qos_profile())
        self.msg_type = msg_type
        self.raw = bool(raw)
        self.depth = int(depth)
        self.taken = 0           # messages taken so far

    @property
    def handle(self):
        """rclpy's subscription handle, for a wait set of one's own (``_rclpy.WaitSet.add_subscription``; the
        relay of ``bench/bench_rcl_relay.py``)."""
        return self._impl

    @property
    def topic_name(self) -> str:
        """The fully resolved topic (after the node's namespace and remappings)."""
        with self._impl:
            return self._impl.get_topic_name()

    def get_publisher_count(self) -> int:
        with self._impl:
            return self._impl.get_publisher_count()

    def take_all(self) -> list:
        """Every message waiting, oldest first (at most ``depth`` plus what arrives while taking,
        bounded by ``2 * depth``); an empty list if none."""
        out = []
        with self._impl:
            for _ in range(2 * self.depth):
                taken = self._impl.take_message(self.msg_type, self.raw)
                if taken is None:
                    break
                out.append(taken[0])
        self.taken += len(out)
        return out

    def take_latest(self):
        """The newest message waiting (the others are dropped), or None if none arrived since the last take: a
        latest-value input read at the reader's own rate (with ``depth=1`` DDS keeps only that one)."""
        messages = self.take_all()
        return messages[-1] if messages else None

    def destroy(self) -> None:
        """Release the rcl subscription (before the node's own handle goes)."""
        self._impl.destroy_when_not_in_use()
