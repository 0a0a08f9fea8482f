"""Running an app in several processes: a master supervising N workers.

``master.py`` holds the master (spawning, signals, health of the workers),
``worker.py`` what runs in each worker process, ``sockets.py`` the listening socket,
``linux.py`` the Linux-specific process calls.
"""

from veter.supervisor.master import Master, MasterConfig

__all__ = ["Master", "MasterConfig"]
