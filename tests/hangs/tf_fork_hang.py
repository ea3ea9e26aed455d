"""The classic TensorFlow fork hang: the parent runs ops (TensorFlow starts its thread pools),
then forks a multiprocessing child that runs an op too. The child has only the forking thread;
the op hands its shards to pool threads that do not exist in the child and waits forever.

Prints "child PID" once the child is started; the parent then waits for it (forever)."""

import multiprocessing
import os

import tensorflow as tf

SIZE = 1024


def preprocess() -> None:
    x = tf.random.uniform((SIZE, SIZE))
    print(float(tf.reduce_sum(tf.matmul(x, x))), flush=True)  # never returns in the child


def main() -> None:
    preprocess()  # the parent's pools are started here
    context = multiprocessing.get_context("fork")
    child = context.Process(target=preprocess, name="preprocess-worker")
    child.start()
    print(f"child {child.pid}", flush=True)
    child.join()


if __name__ == "__main__":
    main()
