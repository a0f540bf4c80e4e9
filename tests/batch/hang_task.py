"""A task process that will not end: ignores SIGTERM, starts a grandchild in its group, echoes
its stdin to stdout, then sleeps. Run as `python -m tests.batch.hang_task PID_FILE`."""

import signal
import subprocess
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "60"])
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(child.pid))
print(sys.stdin.read(), flush=True)
time.sleep(60)
