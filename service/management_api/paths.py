"""Where the management API is served (imported by the app without building the API)."""

MANAGEMENT_PATH = "/management/v1"


def is_management_path(path: str) -> bool:
    return path == MANAGEMENT_PATH or path.startswith(MANAGEMENT_PATH + "/")
