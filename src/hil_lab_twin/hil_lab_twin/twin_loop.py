"""The lab twin's step for the lockstep runners, its Python in two compiled calls (plain Python, no rclpy; issue 17).

:meth:`hil_lab_twin.twin.LabTwin.step` is the readable step: per robot the commands due after the transport delay
(:class:`~hil_lab_twin.servo.DelayLine`), the held reference through the servo (:class:`FirstOrderServo`) and the
PID's set point, per torque arm its due effort and gravity compensation, ``mj_step``, then every F/T channel's
sample (:class:`~hil_lab_twin.ft.FtChannel`). In a lockstep runner its Python costs twice MuJoCo's step.

:class:`TwinLoop` holds that state in arrays while it is *entered*, and :meth:`TwinLoop.step` runs the same
arithmetic in the same order in :func:`loop_pre_step` and :func:`loop_ft_sample` around ``mj_step``: the twin's
data, its F/T readings and its counts are to the bit those of ``LabTwin.step`` after the same commands
(``hil_lab_twin/test/test_twin_loop.py``). The delay lines become FIFO rings: a runner's commands come one per
step in time order, and the delay is the same for all of a robot's commands, so the heap's order is the push order.
:meth:`TwinLoop.leave` puts the state back into the twin's objects. Covered: position commands (no joint
trajectory pending), efforts, F/T channels; not covered (:meth:`TwinLoop.supports` says which): a ring gripper,
the grip between two robots, pushes on a mock-up.
"""

from __future__ import annotations

import ctypes
import heapq
from pathlib import Path

import mujoco
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from hil_common.errors import ConfigError, InputError
from hil_dynamics.kernels import _OPTS
from hil_lab_twin.ft import MUJOCO_SIGN

RING = 64            # commands in flight per robot (a delay of 64 steps); more: the loop refuses the command
ROBOT, ARM = 0, 1    # ``kind`` of a target
DUE_EPS = 1e-9       # DelayLine.pop_due's tolerance [s]


@intrinsic
def _call_c_model_data(typingctx, function, model, data):
    """``function(model, data)`` for the C function at address ``function`` taking two pointers (``void f(const
    mjModel*, mjData*)``), the three given as int64 addresses: MuJoCo's ``mj_step`` from compiled code (the address
    an argument, so the caller's code is cached as any other)."""
    def codegen(context, builder, signature, args):
        address, m, d = args
        pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.VoidType(), [pointer, pointer])
        builder.call(builder.inttoptr(address, function_type.as_pointer()),
                     [builder.inttoptr(m, pointer), builder.inttoptr(d, pointer)])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


@njit(**_OPTS)
def loop_mj_step(mj):
    """``mujoco.mj_step`` on ``mj = (mj_step's address, the model's, the data's)`` (:meth:`TwinLoop.mj`). Unlike the
    Python binding's call, a MuJoCo error inside it is not a Python exception: MuJoCo's own handler prints it and ends
    the process (warnings are counted in the data, as with the binding)."""
    _call_c_model_data(mj[0], mj[1], mj[2])


_MJ_STEP_ADDRESS = []


def mj_step_address() -> int:
    """The address of ``mj_step`` in the MuJoCo library the ``mujoco`` package loaded (the same library: the same
    file, opened again)."""
    if not _MJ_STEP_ADDRESS:
        libraries = sorted(Path(mujoco.__file__).parent.glob('libmujoco.so*'))
        if not libraries:
            raise ConfigError(f'no libmujoco.so* beside {mujoco.__file__}')
        library = ctypes.CDLL(str(libraries[0]))
        _MJ_STEP_ADDRESS.append(ctypes.cast(library.mj_step, ctypes.c_void_p).value)
    return _MJ_STEP_ADDRESS[0]


@njit(**_OPTS)
def loop_pre_step(t, dt, ctrl, qfrc_applied, qfrc_bias, qpos, kind, n, qpos_i, dof_i, act_i, q_offset, decay,
                  kv_kp, ki_kp, servo_pos, servo_vel, integral, hold, gravity_comp, delay, pending, has_pending,
                  ring_t, ring_v, ring_c, ring_head, ring_len, counts):
    """Before ``mj_step`` at time ``t``: each target's pending command (``has_pending``) goes into its ring, due
    ``delay`` later (a command with a non-finite value is refused and counted, as ``validate_command`` does; ``counts``
    per target: accepted, rejected, pushed in all); the commands due at ``t`` (within ``DUE_EPS``) become the held
    reference (the last one wins); then ``LabTwin._step_once``'s robot part: the servo's exact step, the PID's
    integral and set point into ``ctrl``, MuJoCo's bias forces fed forward in ``qfrc_applied`` (zeroed first); a
    torque arm's held effort into ``ctrl``, its bias forces too if it compensates gravity. Returns False, and
    pushes nothing, if a ring is full (the caller then leaves the loop)."""
    for k in range(kind.size):
        if has_pending[k] and ring_len[k] == RING:
            return False
    for k in range(kind.size):
        if not has_pending[k]:
            continue
        has_pending[k] = 0
        finite = True
        for j in range(n[k]):
            if not np.isfinite(pending[k, j]):
                finite = False
        if not finite:
            counts[k, 1] += 1
            continue
        counts[k, 0] += 1
        slot = (ring_head[k] + ring_len[k]) % RING
        ring_t[k, slot] = t + delay[k]
        ring_c[k, slot] = counts[k, 2]
        counts[k, 2] += 1
        for j in range(n[k]):
            ring_v[k, slot, j] = pending[k, j]
        ring_len[k] += 1
    qfrc_applied[:] = 0.0
    for k in range(kind.size):
        while ring_len[k] > 0 and ring_t[k, ring_head[k]] <= t + DUE_EPS:
            h = ring_head[k]
            for j in range(n[k]):
                hold[k, j] = ring_v[k, h, j]
            ring_head[k] = (h + 1) % RING
            ring_len[k] -= 1
        if kind[k] == ROBOT:
            for j in range(n[k]):
                q_ref = hold[k, j]
                q_f = q_ref + (servo_pos[k, j] - q_ref) * decay[k]
                servo_vel[k, j] = (q_f - servo_pos[k, j]) / dt
                servo_pos[k, j] = q_f
                integral[k, j] += (q_f - (qpos[qpos_i[k, j]] + q_offset[k, j])) * dt
                ctrl[act_i[k, j]] = (q_f + kv_kp[k, j] * servo_vel[k, j] + ki_kp[k, j] * integral[k, j]) \
                    - q_offset[k, j]
                qfrc_applied[dof_i[k, j]] = qfrc_bias[dof_i[k, j]]
        else:
            for j in range(n[k]):
                ctrl[act_i[k, j]] = hold[k, j]
                if gravity_comp[k]:
                    qfrc_applied[dof_i[k, j]] = qfrc_bias[dof_i[k, j]]
    return True


@njit(**_OPTS)
def loop_ft_sample(t, sensordata, adr, sums, count, next_t, tol, period, bias, std, noise, noise_i, wrench, stamp,
                   sequence):
    """After ``mj_step``: ``FtChannel.sample`` of every channel at the new time ``t`` with its true wrench
    ``MUJOCO_SIGN * sensordata`` at ``adr`` (force, torque), its noise the next row of its block of standard normals
    (``noise[c]``, ``noise_i[c]``). Returns True if a channel's block is used up (the caller draws the next one
    before the next call)."""
    used_up = False
    for c in range(count.size):
        for i in range(3):
            sums[c, i] += MUJOCO_SIGN * sensordata[adr[c, 0] + i]
            sums[c, 3 + i] += MUJOCO_SIGN * sensordata[adr[c, 1] + i]
        count[c] += 1
        if t + tol[c] < next_t[c]:
            continue
        row = noise_i[c]
        for i in range(6):
            mean = sums[c, i] if count[c] == 1 else sums[c, i] / count[c]
            wrench[c, i] = mean + bias[c, i] + noise[c, row, i] * std[c, i]
            sums[c, i] = 0.0
        noise_i[c] = row + 1
        used_up = used_up or noise_i[c] == noise.shape[1]
        count[c] = 0
        stamp[c] = t
        sequence[c] += 1
        next_t[c] += period[c]
        if next_t[c] <= t:
            next_t[c] = t + period[c]
    return used_up


class TwinLoop:
    """The step state of ``twin`` in arrays (see the module docstring). Targets: the position-controlled robots in
    the twin's order, then the torque arms; :meth:`target` gives a name's index. F/T channels in the twin's order."""

    def __init__(self, twin):
        self.twin = twin
        self.names = tuple(twin._robots) + tuple(twin._arms)
        self._targets = [twin._robots[ns] for ns in twin._robots] + [twin._arms[ns] for ns in twin._arms]
        nt = len(self._targets)
        sizes = [len(a.qpos_adr) for a in self._targets]
        nmax = max(sizes) if sizes else 1
        self.kind = np.array([ROBOT] * len(twin._robots) + [ARM] * len(twin._arms), dtype=np.int64)
        self.n = np.array(sizes, dtype=np.int64)
        self.qpos_i, self.dof_i, self.act_i = (np.zeros((nt, nmax), dtype=np.int64) for _ in range(3))
        self.q_offset, self.kv_kp, self.ki_kp = (np.zeros((nt, nmax)) for _ in range(3))
        self.servo_pos, self.servo_vel, self.integral, self.hold, self.pending = (np.zeros((nt, nmax)) for _ in range(5))
        self.decay, self.delay = np.zeros(nt), np.zeros(nt)
        self.gravity_comp, self.has_pending = np.zeros(nt, dtype=np.int64), np.zeros(nt, dtype=np.int64)
        self.ring_t, self.ring_c = np.zeros((nt, RING)), np.zeros((nt, RING), dtype=np.int64)
        self.ring_v = np.zeros((nt, RING, nmax))
        self.ring_head, self.ring_len = np.zeros(nt, dtype=np.int64), np.zeros(nt, dtype=np.int64)
        self.counts = np.zeros((nt, 3), dtype=np.int64)
        for k, target in enumerate(self._targets):
            m = sizes[k]
            self.qpos_i[k, :m], self.dof_i[k, :m], self.act_i[k, :m] = target.qpos_adr, target.dof_adr, target.act_ids
            self.delay[k] = target.delay.delay
            if self.kind[k] == ROBOT:
                self.q_offset[k, :m] = target.build.q_offset
                self.kv_kp[k, :m], self.ki_kp[k, :m] = target.kv_over_kp, target.ki_over_kp
                self.decay[k] = target.servo.decay
                self.gravity_comp[k] = 1
            else:
                self.gravity_comp[k] = int(target.gravity_compensation)
        self._channels = [channel for channel, _, _ in twin._ft_channels]
        nc = len(self._channels)
        self.adr = np.array([[force, torque] for _, force, torque in twin._ft_channels], dtype=np.int64).reshape(nc, 2)
        self.sums, self.wrench = np.zeros((nc, 6)), np.zeros((nc, 6))
        self.bias = np.array([c._bias for c in self._channels]).reshape(nc, 6)
        self.std = np.array([c._std for c in self._channels]).reshape(nc, 6)
        self.tol = np.array([c._tolerance for c in self._channels])
        self.period = np.array([c.period for c in self._channels])
        self.next_t, self.stamp = np.zeros(nc), np.zeros(nc)
        self.count, self.sequence, self.noise_i = (np.zeros(nc, dtype=np.int64) for _ in range(3))
        rows = {c._noise.shape[0] for c in self._channels}
        self.noise = np.zeros((nc, rows.pop() if rows else 1, 6))
        self.entered = False
        d = twin.data          # MuJoCo's arrays are views that stay valid as long as its data
        #: :func:`loop_pre_step`'s arguments after ``t, dt`` (a caller may run it inside its own compiled call)
        self.pre_args = (d.ctrl, d.qfrc_applied, d.qfrc_bias, d.qpos, self.kind, self.n, self.qpos_i, self.dof_i,
                         self.act_i, self.q_offset, self.decay, self.kv_kp, self.ki_kp, self.servo_pos, self.servo_vel,
                         self.integral, self.hold, self.gravity_comp, self.delay, self.pending, self.has_pending,
                         self.ring_t, self.ring_v, self.ring_c, self.ring_head, self.ring_len, self.counts)
        #: :func:`loop_ft_sample`'s arguments after ``t``
        self.post_args = (d.sensordata, self.adr, self.sums, self.count, self.next_t, self.tol, self.period, self.bias,
                          self.std, self.noise, self.noise_i, self.wrench, self.stamp, self.sequence)
        #: :func:`loop_mj_step`'s ``mj``: ``mj_step``'s address, the model's and the data's (valid while the twin is)
        self.mj = (mj_step_address(), twin.model._address, d._address)

    def target(self, name: str) -> int:
        return self.names.index(name)

    def supports(self) -> str:
        """Why the twin's present state cannot be stepped here ('' if it can)."""
        twin = self.twin
        if twin._pushes:
            return 'a push on a mock-up'
        if twin._grip_sites is not None:
            return 'a grip between two robots'
        for ns, arm in twin._arms.items():
            if arm.finger_rate > 0:
                return f'{ns}: a ring gripper'
        for ns, target in zip(self.names, self._targets):
            if getattr(target, 'follower', None) is not None and target.follower._points:
                return f'{ns}: a joint trajectory in progress'
            if len(target.delay) > RING:
                return f'{ns}: more than {RING} commands in flight'
            for _, _, (kind, _) in target.delay._heap:
                if kind not in ('position', 'effort'):
                    return f'{ns}: a {kind} command in flight'
        if {c._noise.shape[0] for c in self._channels} != {self.noise.shape[1]} and self._channels:
            return 'F/T channels with noise blocks of different sizes'
        return ''

    def enter(self) -> None:
        """Take the twin's step state into the arrays; ConfigError if :meth:`supports` names a reason."""
        why = self.supports()
        if why:
            raise ConfigError(f'TwinLoop: {why}')
        for k, target in enumerate(self._targets):
            m = self.n[k]
            entries = sorted(target.delay._heap)
            self.ring_head[k], self.ring_len[k] = 0, len(entries)
            for i, (t_due, count, (_, payload)) in enumerate(entries):
                self.ring_t[k, i], self.ring_c[k, i], self.ring_v[k, i, :m] = t_due, count, payload
            self.counts[k] = (0, 0, target.delay._count)
            if self.kind[k] == ROBOT:
                self.hold[k, :m] = target.follower._hold
                self.servo_pos[k, :m], self.servo_vel[k, :m] = target.servo.position, target.servo.velocity
                self.integral[k, :m] = target.integral
            else:
                self.hold[k, :m] = target.effort
        self.has_pending[:] = 0
        for c, channel in enumerate(self._channels):
            self.sums[c], self.count[c], self.next_t[c] = channel._sum, channel._count, channel._next
            self.wrench[c], self.stamp[c], self.sequence[c] = channel.wrench, channel.stamp, channel.sequence
            self.noise[c], self.noise_i[c] = channel._noise, channel._noise_i
            if self.noise_i[c] == self.noise.shape[1]:
                self._draw(c)
        self.entered = True

    def leave(self) -> None:
        """Put the state back into the twin's objects, as ``LabTwin.step`` would have left them."""
        if not self.entered:
            return
        self.entered = False
        for k, target in enumerate(self._targets):
            m = self.n[k]
            kind = 'position' if self.kind[k] == ROBOT else 'effort'
            slots = [(self.ring_head[k] + i) % RING for i in range(self.ring_len[k])]
            target.delay._heap = [(float(self.ring_t[k, s]), int(self.ring_c[k, s]), (kind, self.ring_v[k, s, :m].copy()))
                                  for s in slots]
            heapq.heapify(target.delay._heap)
            target.delay._count = int(self.counts[k, 2])
            target.accepted += int(self.counts[k, 0])
            target.rejected += int(self.counts[k, 1])
            if self.kind[k] == ROBOT:
                target.follower.set_hold(self.hold[k, :m])
                target.servo.position, target.servo.velocity = self.servo_pos[k, :m].copy(), self.servo_vel[k, :m].copy()
                target.integral[:] = self.integral[k, :m]
            else:
                target.effort = self.hold[k, :m].copy()
        for c, channel in enumerate(self._channels):
            channel._sum[:], channel._count, channel._next = self.sums[c], int(self.count[c]), float(self.next_t[c])
            channel.wrench, channel.stamp, channel.sequence = self.wrench[c].copy(), float(self.stamp[c]), int(self.sequence[c])
            channel._noise[:], channel._noise_i = self.noise[c], int(self.noise_i[c])

    def command(self, k: int, values: np.ndarray) -> None:
        """Target ``k``'s command (joint positions, or an arm's efforts) at the next :meth:`step`: ``n[k]`` floats,
        else InputError (a non-finite value is refused and counted there, as the twin's command check does)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.n[k],):
            raise InputError(f'{self.names[k]}: {self.n[k]} values expected, got shape {values.shape}')
        self.pending[k, :self.n[k]] = values
        self.has_pending[k] = 1

    def step(self) -> bool:
        """One step of the twin (``LabTwin.step``), the pending commands queued first. If a robot has :data:`RING`
        commands in flight, the loop leaves, gives the pending commands to the twin and steps it with
        ``LabTwin.step``, and returns False (the same step; the caller goes on without the loop)."""
        twin = self.twin
        if not loop_pre_step(float(twin.data.time), twin.dt, *self.pre_args):
            self.step_refused()
            return False
        self.finish_step()
        return True

    def step_refused(self) -> None:
        """After :func:`loop_pre_step` refused the step (a ring full): leave, give the pending commands to the
        twin, and step it with ``LabTwin.step``."""
        twin = self.twin
        pending = [(k, self.pending[k, :self.n[k]].copy()) for k in range(self.n.size) if self.has_pending[k]]
        self.has_pending[:] = 0
        self.leave()
        for k, values in pending:
            (twin.command_positions if self.kind[k] == ROBOT else twin.command_efforts)(self.names[k], values)
        twin.step()

    def finish_step(self) -> None:
        """The step after :func:`loop_pre_step`: ``mj_step``, then the F/T channels' samples."""
        twin = self.twin
        d = twin.data
        mujoco.mj_step(twin.model, d)
        twin.steps += 1
        if loop_ft_sample(float(d.time), *self.post_args):
            self.draw_used_up()

    def draw_used_up(self) -> None:
        """A new block of standard normals for each channel that used up its own."""
        for c in range(self.noise_i.size):
            if self.noise_i[c] == self.noise.shape[1]:
                self._draw(c)

    def _draw(self, c: int) -> None:
        """Channel ``c``'s next block of standard normals, from its own generator (``FtChannel``'s stream)."""
        self._channels[c]._rng.standard_normal(out=self.noise[c])
        self.noise_i[c] = 0


def warm_up() -> None:
    """Compile (or load) the kernels: a few steps of a small facility's loop."""
    from hil_lab_twin.scene import facility_config
    from hil_lab_twin.twin import LabTwin

    twin = LabTwin(facility_config('serial'))
    loop = TwinLoop(twin)
    loop.enter()
    for _ in range(2):
        loop.command(0, twin._robots['client'].build.q_initial)
        loop.step()
    loop.leave()


if __name__ == '__main__':
    import time as _time

    _t0 = _time.process_time()
    warm_up()
    print(f'hil_lab_twin.twin_loop: compiled kernels ready ({_time.process_time() - _t0:.1f} s CPU)')
