"""Runs a command as a child subreaper: an agent that is PID 1 in a container (or any
subreaper) sees the orphans its child leaves. Used by the process tests.

    subreaper.py [--close-after SECS] [--signal NAME:SECS]... [--input FILE] -- COMMAND...

The command's stdin is FILE's lines (or nothing), closed after --close-after seconds (default
at once); each --signal is sent to the command that many seconds after it started. Once the
command has exited (it is killed after 60 s), every process handed to this one is watched
for 3 s and reaped. Prints one JSON line on stdout: the command's exit code ("code", or
"signal"), its stdout lines ("stdout"), and the processes adopted ("adopted": [{"pid",
"name", "zombie"}]).
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36


def children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append((int(entry), name, fields[0]))
    return found


def main():
    args = sys.argv[1:]
    close_after, signals, input_file = 0.0, [], None
    while args and args[0] != "--":
        flag = args.pop(0)
        if flag == "--close-after":
            close_after = float(args.pop(0))
        elif flag == "--signal":
            name, secs = args.pop(0).split(":")
            signals.append((getattr(signal, "SIG" + name), float(secs)))
        elif flag == "--input":
            input_file = args.pop(0)
        else:
            sys.exit(f"unknown flag {flag}")
    command = args[1:]
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
    reader.start()
    started = time.monotonic()
    if input_file:
        with open(input_file, "rb") as f:
            child.stdin.write(f.read())
        child.stdin.flush()
    pending = sorted(signals, key=lambda s: s[1])
    closed = False
    while child.poll() is None and time.monotonic() - started < 60:
        now = time.monotonic() - started
        if not closed and now >= close_after:
            child.stdin.close()
            closed = True
        while pending and now >= pending[0][1]:
            child.send_signal(pending.pop(0)[0])
        time.sleep(0.02)
    if child.poll() is None:
        child.kill()
    code = child.wait()
    reader.join(5)
    adopted = {}
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        for pid, name, state in children_of(os.getpid()):
            seen = adopted.setdefault(pid, {"pid": pid, "name": name, "zombie": False})
            seen["zombie"] = seen["zombie"] or state == "Z"
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.05)
    for pid in adopted:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    result = {"adopted": list(adopted.values())}
    result["signal" if code < 0 else "code"] = -code if code < 0 else code
    result["stdout"] = [line.decode("utf-8", "replace").rstrip("\n") for line in lines]
    print(json.dumps(result))


main()
