"""openapi-generator (PyPI ``openapi-generator-cli``, which bundles the jar; Java from Debian) run as users run it.

One JVM for everything: ``batch`` validates each served document (a document the validator refuses fails its
generation with the validator's errors) and generates every client from its live URL. Batch mode silences the
generators' log, so a logback configuration of ours turns their warnings back on: the loggers ``batch`` switches off
are ``ROOT``, ``org.openapitools`` and ``io.swagger``, and the ones named below, one level down, keep their level.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.tool_processes import tool_env

GENERATORS = ("python", "typescript-fetch")
# What docs/menus-api.md tells users to add, as `--additional-properties=importFileExtension=.js` (the same option in a
# batch file): typescript-fetch then writes its relative imports with `.js`, as an ES module compiled with
# `--module nodenext` needs them (TS2835 otherwise).
EXTRA_PROPERTIES = {"typescript-fetch": {"importFileExtension": ".js"}}
LOGBACK = """<configuration>
  <statusListener class="ch.qos.logback.core.status.NopStatusListener" />
  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>[%thread] %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.openapitools.codegen" level="WARN" additivity="false"><appender-ref ref="out"/></logger>
  <logger name="io.swagger.v3" level="WARN" additivity="false"><appender-ref ref="out"/></logger>
  <logger name="io.swagger.parser" level="WARN" additivity="false"><appender-ref ref="out"/></logger>
  <root level="WARN"><appender-ref ref="out"/></root>
</configuration>
"""
# What the generators print whatever the document, each with why it is not about ours:
INTRINSIC_WARNINGS = {
    # The python generator 7.26 looks up a schema by a null reference for every document, a one-operation document
    # with no schema at all included (and logs it once per thread).
    "o.o.codegen.utils.ModelUtils - Failed to get the schema name: null",
    # The console's sign-in callback takes the parameter `error`, which RFC 6749 §4.1.2.1 names; typescript-fetch
    # checks every parameter's name against its model names and says so, then generates `error?: string` as is.
    "o.o.c.l.AbstractTypeScriptClientCodegen - Error (model name matches existing language type) cannot be used as"
    " a model name. Renamed to ModelError",
}


@dataclass(frozen=True)
class Generated:
    output: str  # everything the one JVM printed
    folder: Path  # <folder>/<document>-<generator>/ for each document and generator

    def warnings(self) -> list[str]:
        """Every warning the generators printed about the documents (without its thread)."""
        found = [re.sub(r"^\[[^\]]*\] ", "", line) for line in self.output.splitlines() if " WARN " in line]
        return [line for line in found if line.removeprefix("WARN  ") not in INTRINSIC_WARNINGS]

    def python_package(self, document: str) -> Path:
        return self.folder / f"{document}-python"

    def typescript_sources(self, document: str) -> Path:
        return self.folder / f"{document}-typescript-fetch" / "src"


def openapi_generator_cli() -> str:
    return shutil.which("openapi-generator-cli", path=str(Path(sys.executable).parent)) or "openapi-generator-cli"


def generate_clients(documents: dict[str, str], folder: Path) -> Generated:
    """Both generators over each ``name → live URL``, in one ``openapi-generator-cli batch`` (one JVM)."""
    (folder / "logback.xml").write_text(LOGBACK, encoding="utf-8")
    configs = []
    for name, url in documents.items():
        for generator in GENERATORS:
            config = folder / f"{name}-{generator}.yaml"
            extra = "".join(f"  {key}: {value}\n" for key, value in EXTRA_PROPERTIES.get(generator, {}).items())
            config.write_text(
                f"generatorName: {generator}\ninputSpec: {url}\noutputDir: {folder / f'{name}-{generator}'}\n"
                f"additionalProperties:\n  packageName: {name}_client\n  npmName: {name}-client\n{extra}",
                encoding="utf-8",
            )
            configs.append(str(config))
    env = tool_env(JAVA_OPTS=f"-Dlogback.configurationFile={folder / 'logback.xml'}")
    command = [openapi_generator_cli(), "batch", "--fail-fast", "--threads", "2", *configs]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    return Generated(output, folder)
