import veter

app = veter.App()
raise RuntimeError("this module fails at import")
