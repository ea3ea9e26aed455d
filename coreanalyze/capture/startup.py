"""The process-startup hook: site-packages/coreanalyze-guard.pth runs this in every Python
process of the environment when COREANALYZE_GUARD is set (and costs nothing else: the .pth line
reads one variable). Children inherit the variable, so what an armed program starts is armed too
(or already watched by its parent's watcher). It never raises: a guard that cannot arm says so
and the program runs on."""

from __future__ import annotations


def arm_at_startup() -> None:
    try:
        from coreanalyze.capture.guard import arm_from_environment

        arm_from_environment()
    except Exception as e:  # noqa: BLE001 - a startup hook must never stop the program it guards
        import sys

        print(f"coreanalyze: the crash guard is not armed: {type(e).__name__}: {e}", file=sys.stderr)
