"""The ROS side of the post-grasp re-basing plan (:class:`hil_dynamics.rebase.RebasePlan`).

The servicer admittance node publishes the plan once on ``nominal/rebase_plan``
(``std_msgs/Float64MultiArray``, :meth:`RebasePlan.to_list`, ``t_start`` in seconds on the ROS
clock: simulated or wall), transient-local so that a client node that (re)starts later still gets
it. Each client-side node subscribes with :func:`subscribe_rebase_plan` and hands the plan to its
rule in its own time base.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from hil_common.errors import InputError
from hil_dynamics.rebase import RebasePlan

TOPIC = 'nominal/rebase_plan'
QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def plan_message(plan: RebasePlan, offset_s: float) -> Float64MultiArray:
    """The message of ``plan`` whose ``t_start`` is ``offset_s`` behind the ROS clock's seconds."""
    data = plan.to_list()
    data[0] += offset_s
    return Float64MultiArray(data=data)


def subscribe_rebase_plan(node, accept, ros_to_rule_s, now_s):
    """Subscribe ``node`` to the plan: ``accept(plan, now)`` (the rule's ``set_rebase_plan``) gets it with
    ``t_start`` in the rule's seconds (``ros_to_rule_s``); a malformed plan, one refused or one that
    arrives late is logged as an error (the two sides' nominals would part)."""
    def on_plan(msg):
        log = node.get_logger()
        try:
            plan = RebasePlan.from_list(msg.data)
        except InputError as exc:
            log.error(f'{TOPIC}: {exc}')
            return
        now = now_s()
        if now is None:
            log.error(f'{TOPIC}: a plan before this node\'s clock runs, ignored')
            return
        plan.t_start = ros_to_rule_s(plan.t_start)
        problem = accept(plan, now)
        if problem:
            log.error(f'{TOPIC}: {problem}')
        else:
            log.info(f're-basing the nominal onto the stack from t = {plan.t_start:.3f} s (rule time) over '
                     f'{plan.ramp_s:g} s')
    return node.create_subscription(Float64MultiArray, TOPIC, on_plan, QOS)
