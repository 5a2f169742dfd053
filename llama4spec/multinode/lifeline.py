"""Runs on a follower host: start a command in its own process group and stop that whole group
when the launcher's connection closes (stdin reaches end of file) or a signal arrives.

    python -m llama4spec.multinode.lifeline -- COMMAND [ARGS...]

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


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5.0)):
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
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m llama4spec.multinode.lifeline -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    done = threading.Event()

    def watch_stdin() -> None:
        try:
            while os.read(0, 4096):  # unbuffered: no lock left held at interpreter shutdown
                pass
        except OSError:
            pass
        done.set()

    def on_signal(signum: int, frame: object) -> None:
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    threading.Thread(target=watch_stdin, daemon=True).start()
    while proc.poll() is None and not done.wait(0.5):
        pass
    code = proc.poll()
    _stop(proc)  # also whatever the command left in its group
    return code if code is not None else 143


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
