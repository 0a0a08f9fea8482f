"""A differential fuzzer for hosted ASGI/WSGI apps (design: see the end of this work)."""
