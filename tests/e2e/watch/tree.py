# A parent and two workers (as a DataLoader's), all sleeping; the workers ignore SIGINT, so
# that only watch's SIGTERM ends them. Writes its pids to PIDFILE.
import os
import signal
import sys
import time

pids = [os.getpid()]
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        time.sleep(600)
        os._exit(0)
    pids.append(pid)
with open(sys.argv[1], "w") as f:
    f.write(" ".join(map(str, pids)))
time.sleep(600)
