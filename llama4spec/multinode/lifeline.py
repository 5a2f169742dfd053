"""Start a command in its own process group and stop that whole group when the launcher's
connection closes (stdin reaches end of file) or a signal arrives. Followers run under it on their
hosts; local servers run under it too, tethered to llama4spec by a pipe, so that even a SIGKILLed
llama4spec (or one the OOM killer took) leaves no server or engine process behind.

    python -m llama4spec.multinode.lifeline [--grace SECONDS] -- COMMAND [ARGS...]

ssh and srun end the remote side only loosely when their client goes away; vLLM's workers would
outlive it. Here the end of stdin is the order to stop, so closing the launcher stops the node.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

GRACE_S = 15.0
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child, before exec: a new session, and SIGTERM when the thread that started it dies
    (Linux ``prctl``; elsewhere the session alone)."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _stop(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            proc.poll()
            time.sleep(0.2)


def main(argv: list[str]) -> int:
    grace_s = GRACE_S
    if argv[:1] == ["--grace"] and len(argv) > 1:
        try:
            grace_s = float(argv[1])
        except ValueError:
            print(f"lifeline: --grace {argv[1]!r} is not a number of seconds", file=sys.stderr)
            return 2
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m llama4spec.multinode.lifeline [--grace SECONDS] -- COMMAND [ARGS...]",
              file=sys.stderr)
        return 2
    # its own session, and SIGTERM should this lifeline itself be killed outright
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    done = threading.Event()

    def watch_stdin() -> None:
        try:
            while os.read(0, 4096):  # unbuffered: no lock left held at interpreter shutdown
                pass
        except OSError:
            pass
        done.set()

    def on_signal(signum: int, _frame: object) -> None:
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    threading.Thread(target=watch_stdin, daemon=True).start()
    while proc.poll() is None and not done.wait(0.5):
        pass
    code = proc.poll()
    _stop(proc, grace_s)  # also whatever the command left in its group
    return code if code is not None else 143


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
