"""`python -m tritonhook.mem --out F --interval-ms N -- script.py args`: the child side of `tritonhook memwatch`
(`runner.child_main`), which `runner.wrap_python_command` writes."""

import sys

from .runner import child_main

sys.exit(child_main())
