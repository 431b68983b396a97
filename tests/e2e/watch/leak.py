# Grows by CHUNK bytes (default 1 MiB) every 100 ms on a fixed schedule, for SECONDS, so its true
# rate is CHUNK / 0.1 s whatever the sleeps' jitter. The pages are written, so RSS grows.
import sys
import time

seconds = float(sys.argv[1])
chunk = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
keep = []
t0 = time.monotonic()
while True:
    t = time.monotonic() - t0
    if t >= seconds:
        break
    while len(keep) < int(t / 0.1) + 1:
        keep.append(b"\x01" * chunk)
    time.sleep(0.02)
