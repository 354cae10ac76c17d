"""A minimal worker used by tests and `forge doctor`: echoes its payload, or misbehaves on request."""

from __future__ import annotations

import os
import sys
import time

from forgekernel.delivery.channel import receive


def main() -> None:
    env = receive()
    act = env.payload.get("act", "echo")
    waits = []
    if act == "gate":  # ask for the device in each mode given, then hold it a while
        for mode in env.payload.get("modes", ["X"]):
            waits.append(env.device(mode, int(env.payload.get("footprint", 0))))
            time.sleep(float(env.payload.get("hold_s", 0)))
    if act == "sleep":
        time.sleep(float(env.payload.get("seconds", 60)))
    elif act == "exit":
        os._exit(int(env.payload.get("code", 3)))
    elif act == "segv":
        import ctypes

        ctypes.string_at(0)
    elif act == "flood":
        while True:
            sys.stdout.write("x" * 65536)
    elif act == "forge":
        os.write(env._fd, b"FKR1 00 2\n{}")
    env.reply({"echo": env.payload, "delivery": env.delivery,
               "interpret": os.environ.get("TRITON_INTERPRET", ""), "waits": waits, "shared": env.shared,
               "may_share": env.may_share})


if __name__ == "__main__":
    main()
