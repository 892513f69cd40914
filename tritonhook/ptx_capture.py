"""Old name of `tritonhook.session` (capture sessions); kept as a re-export for one release."""

from .session import (BOOTSTRAP_DIR, ENABLE_ENV, Session, active_session, child_env, disable, enable,
                      enable_from_env, session)

__all__ = ["BOOTSTRAP_DIR", "ENABLE_ENV", "Session", "active_session", "child_env", "disable", "enable",
           "enable_from_env", "session"]
