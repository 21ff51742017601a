"""Which named nodes listen to a publisher: a mission starts once its robot side does.

A count of subscribers does not tell who listens: a recorder and an observer make two while DDS
has not yet matched the motion table (discovery takes seconds on a busy machine), and a mission
that starts then runs its first commands without a robot (docs/docking.md).
"""

from __future__ import annotations


def missing_consumers(required, listening) -> list[str]:
    """The fully qualified node names in ``required`` that are not in ``listening``, in order."""
    listening = set(listening)
    return [name for name in required if name not in listening]


def listening_nodes(node, publisher) -> set[str]:
    """Fully qualified names of the nodes subscribed to ``publisher``'s topic (rclpy graph query)."""
    return {f"{e.node_namespace.rstrip('/')}/{e.node_name}"
            for e in node.get_subscriptions_info_by_topic(publisher.topic_name)}


def fully_qualified_names_check(names) -> str | None:
    """A ``Param`` check: every name is a fully qualified node name."""
    return next((f'{n!r} is not a fully qualified node name (e.g. /chaser/motion_table)' for n in names
                 if not n.startswith('/')), None)
