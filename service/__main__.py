from service.cli.commands import run

run()
