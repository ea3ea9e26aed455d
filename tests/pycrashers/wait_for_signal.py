"""A Python process that waits to be killed by another one (the test sends it a fatal signal)."""
import sys
import time


def wait_for_work():
    print("ready", flush=True)
    while True:
        time.sleep(60)  # WAIT-LINE


if __name__ == "__main__":
    sys.exit(wait_for_work())
