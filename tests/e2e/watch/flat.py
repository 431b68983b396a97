# Holds 50 MiB, allocated at once, for SECONDS: a flat RSS (no leak).
import sys
import time

buf = b"\x01" * (50 << 20)
time.sleep(float(sys.argv[1]))
