"""Three Python functions deep, then a genuine read of address 0x10 through ctypes.

The locals of the innermost frames cover the kinds of values a safe repr must handle.
"""
import ctypes


def load_weights(address):
    header = b"weights"
    count = 3
    shape = (3, 4)
    names = ["conv1", "conv2"]
    meta = {"epoch": 1}
    missing = None
    enabled = True
    big = -(2**70)
    title = "na\u00efve \u2713"
    blob = "x" * 500
    return ctypes.string_at(address, 8)  # CRASH-LINE


def build_model(name):
    scale = 1.5
    return load_weights(0x10)  # CALL-LOAD


def train(epochs):
    label = "resnet"
    return build_model(label)  # CALL-BUILD


if __name__ == "__main__":
    train(3)  # CALL-TRAIN
