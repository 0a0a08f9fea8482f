"""Running an app in several processes: a master supervising N workers.

``config.py`` holds the master's settings, ``master.py`` the master (spawning, signals, health of the workers),
``worker.py`` what runs in each worker process, ``sockets.py`` the listening socket,
``linux.py`` the Linux-specific process calls.
"""

from veter.supervisor.config import MasterConfig, usable_cpus
from veter.supervisor.master import Master

__all__ = ["Master", "MasterConfig", "usable_cpus"]
