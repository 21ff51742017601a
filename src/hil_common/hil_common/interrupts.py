"""A quiet Ctrl-C for node executables, from their first import on (no rclpy, no imports of ours).

A node process that gets SIGINT while it is still importing its modules or building its node
(a launch shutting down while the graph starts) would print a raw ``KeyboardInterrupt``
traceback. :func:`quiet_interrupts` (called first thing in a package's ``__init__``) replaces
Python's default SIGINT handler by one that raises :class:`Interrupted`, a ``SystemExit`` with
code 0: it unwinds like ``KeyboardInterrupt`` but ends the process silently.
:func:`hil_common.ros_main.run_node` catches it to shut rclpy down cleanly. Where code turned it into another error
(a C extension's initialisation, a ``__del__``), the process still ends quietly with code 0
(:func:`_quiet_excepthook`, :func:`_quiet_unraisable`). It only acts in the
package's own executables (``<prefix>/lib/<package>/<executable>``, how launch_ros and
``./dev`` run them), so importing the package in pytest or a notebook changes nothing.
"""

from __future__ import annotations

import os
import signal
import sys


class Interrupted(SystemExit):
    """SIGINT: unwind and exit with code 0, without a traceback."""

    def __init__(self):
        super().__init__(0)


_received = False


def _raise_interrupted(signum, frame):
    global _received
    _received = True
    raise Interrupted()


def _note_interrupt(signum, frame):
    global _received
    _received = True


def note_interrupts_from_now_on() -> bool:
    """Before ``rclpy.init``: SIGINT is only noted from now on (returns whether the handler was changed).

    rclpy's own SIGINT handler (installed by ``rclpy.init``) shuts the context down, which ends
    the spin cleanly, and then calls the handler it found. Were that one to raise, the exception
    would surface at whatever bytecode runs next: possibly inside rclpy's own code (a message
    conversion, a Future's ``__init__``), leaving a traceback, or inside a callback, where the
    events executor logs ``[FATAL] Exception in 'timers' callback`` for it. So both the quiet
    handler and Python's default one (a node of a package without :func:`quiet_interrupts`) are
    replaced; a handler the process installed itself is left alone.
    """
    try:
        if signal.getsignal(signal.SIGINT) in (_raise_interrupted, signal.default_int_handler):
            signal.signal(signal.SIGINT, _note_interrupt)
            return True
    except ValueError:      # not the main thread
        pass
    return False


def interrupt_received() -> bool:
    """SIGINT reached the quiet handler. Raised inside a message conversion (rclpy's C code
    calling a message's ``__init__``), :class:`Interrupted` reaches the executor only as
    pybind11's ``RuntimeError: Unable to convert call argument '0'``; this flag tells
    :func:`hil_common.ros_main.run_node` that it was the shutdown, not a crash."""
    return _received


def is_executable_of(package: str) -> bool:
    """This process runs one of ``package``'s executables (``.../lib/<package>/<executable>``)."""
    return bool(sys.argv) and os.path.basename(os.path.dirname(os.path.abspath(sys.argv[0]))) == package


def quiet_interrupts(package: str) -> bool:
    """Install the quiet SIGINT handler if this process is one of ``package``'s executables and SIGINT
    still has Python's default handler (in the main thread); returns whether it did."""
    if not is_executable_of(package):
        return False
    return install_quiet_handler()


def install_quiet_handler() -> bool:
    """:func:`quiet_interrupts` without its executable check: the quiet handler where SIGINT still has Python's
    default one (in the main thread), :func:`_quiet_unraisable` as ``sys.unraisablehook`` and
    :func:`_quiet_excepthook` as ``sys.excepthook``."""
    global _previous_unraisablehook, _previous_excepthook
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise_interrupted)
            if sys.unraisablehook is not _quiet_unraisable:
                _previous_unraisablehook = sys.unraisablehook
                sys.unraisablehook = _quiet_unraisable
            if sys.excepthook is not _quiet_excepthook:
                _previous_excepthook = sys.excepthook
                sys.excepthook = _quiet_excepthook
            return True
    except ValueError:      # not the main thread
        pass
    return False


_previous_unraisablehook = sys.unraisablehook
_previous_excepthook = sys.excepthook


def caused_by_interrupt(exc: BaseException | None) -> bool:
    """``exc`` is :class:`Interrupted` or ``KeyboardInterrupt``, or was raised while handling one (its cause or
    context, all the way down)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (Interrupted, KeyboardInterrupt)):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _quiet_excepthook(exc_type, exc, tb) -> None:
    """An exception that ends the process because SIGINT broke what it was doing, in code that turned
    :class:`Interrupted` into another error: a C extension's initialisation (rclpy's ``_rclpy_pybind11``, imported
    0.3 s into a node's start-up, gave ``ImportError: initialization failed`` from it: a traceback and exit code 1 in
    a fresh-clone suite beside two busy loops). The interrupt was noted (:func:`interrupt_received`) and caused it,
    so the process ends as an interrupt does: quietly, with code 0. Anything else goes to the previous hook."""
    if _received and caused_by_interrupt(exc):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(0)
    _previous_excepthook(exc_type, exc, tb)


def _quiet_unraisable(unraisable) -> None:
    """A SIGINT whose handler ran inside code that cannot raise (a weakref's callback, e.g. importlib's module-lock
    cleanup while the node imports; a ``__del__``): Python reports :class:`Interrupted` there as 'Exception ignored',
    with a traceback, and goes on. It was noted (:func:`interrupt_received`), and ``run_node`` ends the process
    once the node is built; so it is not reported. Anything else goes to the previous hook."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    _previous_unraisablehook(unraisable)
