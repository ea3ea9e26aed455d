"""What watching costs a healthy run: a small TensorFlow training (import, a tf.data pipeline, a
Keras model fit over a few epochs, its thread pools and data workers) run plainly and under
`coreanalyze run`, alternately, in the same session.

    .venv/bin/python bench/capture_overhead.py [--repeat 5] [--steps 200]

Prints each run's wall time, the medians and the ratio (the goal: within 1.15x of the plain run).
Nothing crashes, so nothing is written; the watcher only lets the kernel's events through (new
threads, forks, signals).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = r"""
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
steps = int(sys.argv[1])
x = np.random.default_rng(0).normal(size=(steps * 32, 64)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int32")
data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32).map(lambda a, b: (a * 2.0, b), num_parallel_calls=4).prefetch(2)
model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(2)])
model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(data, epochs=3, verbose=0)
print("done")
"""


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "done" not in done.stdout:
        sys.exit(f"the workload failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "train.py"
        script.write_text(WORKLOAD)
        plain = [sys.executable, str(script), str(args.steps)]
        watched = [sys.executable, "-m", "coreanalyze", "run", "--out", str(Path(work) / "reports"), "--", *plain]
        timed(plain)  # warm the page cache: TensorFlow's libraries are read once
        times: dict[str, list[float]] = {"plain": [], "watched": []}
        for i in range(args.repeat):
            for name, command in (("plain", plain), ("watched", watched)) if i % 2 == 0 else (("watched", watched), ("plain", plain)):
                times[name].append(timed(command))
                print(f"  {name:8} {times[name][-1]:6.2f} s", flush=True)
        if (Path(work) / "reports").exists():
            sys.exit("a healthy run wrote reports")
    plain_s, watched_s = statistics.median(times["plain"]), statistics.median(times["watched"])
    ratio = watched_s / plain_s
    print(f"median: plain {plain_s:.2f} s, under coreanalyze run {watched_s:.2f} s: {ratio:.3f}x "
          f"({'met' if ratio <= 1.15 else 'missed'}: goal <= 1.15x)")  # fmt: skip


if __name__ == "__main__":
    main()
