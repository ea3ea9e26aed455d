"""Interpreter state damaged before a fault: the caller's code object gets a garbage type.

The frame walker must still report the frames around the damaged one, and say what it could
not read.
"""
import ctypes
import sys

GARBAGE = b"\xff" * 64
BYTES_DATA_OFFSET = 32  # PyBytesObject.ob_sval in release builds of 3.10-3.13
TYPE_POINTER_OFFSET = 8  # PyObject.ob_type in release builds


def break_caller_and_crash():
    caller_code = sys._getframe(1).f_code
    fake_type = id(GARBAGE) + BYTES_DATA_OFFSET  # a "type" whose tp_name is 0xffff...
    ctypes.c_void_p.from_address(id(caller_code) + TYPE_POINTER_OFFSET).value = fake_type
    return ctypes.string_at(0x10, 8)  # CRASH-LINE


def damaged():
    return break_caller_and_crash()  # CALL-BREAK


def outer():
    return damaged()  # CALL-DAMAGED


if __name__ == "__main__":
    outer()  # CALL-OUTER
