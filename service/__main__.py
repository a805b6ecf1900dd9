from service.cli import run

run()
