from oiexec._entry import main

main()
