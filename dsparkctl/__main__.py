from dsparkctl.cli import main

main()
