import veter

app = veter.App()


@app.on_startup
def fail() -> None:
    raise RuntimeError("database unreachable")
