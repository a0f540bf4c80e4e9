from oiexec.cli import main

main()
