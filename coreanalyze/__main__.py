from coreanalyze.cli import main

main()
