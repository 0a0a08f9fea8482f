"""veter's load-test suite: peers, load generators, scenarios, reports."""
