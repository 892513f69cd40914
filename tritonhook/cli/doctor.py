"""`tritonhook doctor`: thin over `tritonhook.doctor.diagnose`."""

from __future__ import annotations

from ..format import show
from .common import store_arg


def add_doctor(sub) -> None:
    parser = sub.add_parser("doctor", help="check this machine for tritonhook: Triton, ptxas, GPUs, DSLs, other "
                                           "tools' hooks, the store (exit status 1 on a failure)")
    store_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.set_defaults(handler=_doctor)


def _doctor(args) -> int:
    from ..doctor import diagnose

    report = diagnose(args.store)
    show(report, as_json=args.json)
    return 0 if report.ok else 1
