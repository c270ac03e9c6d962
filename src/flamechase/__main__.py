from flamechase.cli import main

main()
