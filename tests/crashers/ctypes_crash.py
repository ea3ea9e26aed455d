"""A Python process that dies in native code through ctypes (a read of address 0x10)."""
import ctypes


def read_config(address):
    return ctypes.string_at(address, 8)  # faults in libc's memcpy / ctypes


def main():
    values = [1, 2, 3]
    return read_config(0x10), values


if __name__ == "__main__":
    main()
