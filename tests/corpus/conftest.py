"""Real servers for the corpus: the e2e fixtures, shared."""

from tests.e2e.conftest import _warm_process_globals, serve

__all__ = ["_warm_process_globals", "serve"]
