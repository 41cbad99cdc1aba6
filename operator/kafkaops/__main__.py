"""`python -m kafkaops` is the `kafkaops` command."""

from kafkaops.cli.main import main

main()
