from minrepro.cli import main

main()
