from veter.cli import main

main()
