# Says it is ready, then waits to be signalled.
import time

print("ready", flush=True)
time.sleep(60)
