"""What a database outage looks like from here: the errors that say the database cannot be used
right now (it refused or lost the connection, did not answer in time, is starting, recovering or
shutting down), as opposed to a statement that is wrong. The API reports the first kind as
`UNAVAILABLE` (try again later) and the second as a server fault.
"""

from __future__ import annotations

import errno

import asyncpg

# A statement or a pool acquire over its bound; a socket refused, reset or broken; SQLSTATE
# class 08 (connection exception) and the operator interventions that end sessions:
# 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now (starting, recovering);
# 53300 too many connections.
_OUTAGES = (
    TimeoutError,
    ConnectionError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
)

# Socket errors of a server that is gone or unreachable (ConnectionError covers refused, reset,
# aborted and broken pipe); ENOENT is a Unix socket whose server stopped and removed it.
_NETWORK_ERRNOS = {errno.ENOENT, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT}


def is_database_outage(error: BaseException | None) -> bool:
    """True when `error` (or an error it was raised from) says the database is unreachable or
    did not answer in time: a statement over its bound, a pool with no connection to give,
    a connection refused or lost, a server starting, recovering or shutting down."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, _OUTAGES):
            return True
        if isinstance(error, OSError) and error.errno in _NETWORK_ERRNOS:
            return True
        # asyncpg's own words for a connection it already closed after a failure.
        if isinstance(error, asyncpg.InterfaceError) and "connection is closed" in str(error):
            return True
        error, seen = error.__cause__, seen + 1
    return False
